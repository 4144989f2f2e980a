"""The changes feed as Server-Sent Events (``GET /api/events/stream``, ``/_admin/events/stream``).

A stream is a response body made piece by piece: ``retry: 1000`` first, then the events after
the client's ``Last-Event-ID`` (or ``since``), each as ``id``/``event``/``data`` lines, new ones
as they commit, and a ``: keep-alive`` comment when nothing was sent for a while. Between two
looks at the database it yields the engine's :class:`~sowctl.engine.Pause`, so under
``sowctl serve`` an idle stream holds no thread, only a timer; under another WSGI server it
sleeps in its thread instead.

Every stream is bounded: it ends after ``max_seconds`` (the client reconnects with
``Last-Event-ID`` and misses nothing), and ``StreamSlots`` caps how many are open in one
process and per caller (refused with 503 or 429 and ``Retry-After``). A stream looks for
new events every ``poll_seconds`` (a quarter of a second: one indexed read), so a commit of
any process reaches it within that.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

import bottle

from sowctl.engine import PAUSE_KEY, Pause
from sowctl.foundation.errors import InvalidInput, RateLimited, ServiceUnavailable
from sowctl.schemas.events import EventOut, EventQuery, event_id, event_sequence
from sowctl.server.callers import caller_of_environ
from sowctl.server.responses import log_failure
from sowctl.services import events

CONTENT_TYPE = "text/event-stream; charset=utf-8"
# Set in the environ of a request answered with a stream: the test double releases its gate
# at once instead of holding it until the body closes (a stream lasts minutes and only reads;
# a reset must not wait for it).
STREAM_KEY = "sowctl.event_stream"
RETRY_MILLISECONDS = 1000
# What the OpenAPI document says of a stream's answer (``message_schema``: each message).
DESCRIPTION = (
    "Server-Sent Events: retry: 1000 first, then each event as id: <event id>, event: <type> and "
    "data: <the event as JSON> lines, new ones as they commit, and a ': keep-alive' comment every "
    "15 s; the stream ends after a few minutes (reconnect with Last-Event-ID). 429 or 503 with "
    "Retry-After when too many streams are open"
)
BATCH = 100  # events read per look


@dataclass(frozen=True)
class StreamLimits:
    """How long a stream lives and how often it looks (``ServerSettings`` sets them)."""

    max_seconds: float = 300.0
    poll_seconds: float = 0.25
    keepalive_seconds: float = 15.0
    per_process: int = 32
    per_caller: int = 4


class StreamSlots:
    """Open streams of one process, in all and per caller."""

    def __init__(self, per_process: int, per_caller: int) -> None:
        self.per_process = per_process
        self.per_caller = per_caller
        self._open: Counter[Hashable] = Counter()
        self._lock = threading.Lock()

    def acquire(self, caller: Hashable) -> Callable[[], None]:
        """Take a slot for ``caller``; the function that frees it. Refused when full."""
        with self._lock:
            if sum(self._open.values()) >= self.per_process:
                busy = f"too many event streams are open ({self.per_process}); retry later"
                raise ServiceUnavailable(busy + " or read GET /api/events")
            if self._open[caller] >= self.per_caller:
                raise RateLimited(
                    f"this caller has {self.per_caller} event streams open already; close one first", 5
                )
            self._open[caller] += 1
        freed = threading.Event()

        def release() -> None:
            if freed.is_set():
                return
            freed.set()
            with self._lock:
                self._open[caller] -= 1
                if self._open[caller] <= 0:
                    del self._open[caller]

        return release


def start_after(query: EventQuery, last_event_id: str | None) -> int:
    """Where a stream starts: after the ``Last-Event-ID`` header (a reconnecting client),
    else after ``since``; 0: from the oldest event kept."""
    if last_event_id is not None and last_event_id.strip():
        sequence = event_sequence(last_event_id.strip())
        if sequence is None:
            raise InvalidInput.for_field(
                "Last-Event-ID", f"must be an event id ({event_id(1)}) or its number"
            )
        return sequence
    return query.after


def frame(event: EventOut) -> bytes:
    """One event as an SSE message."""
    data = json.dumps(event.model_dump(mode="json", by_alias=True), ensure_ascii=False, separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n".encode()


def message_schema(data_schema: dict) -> dict:
    """The JSON schema of one message of a stream whose data is JSON of ``data_schema`` (as
    schemathesis reads a text/event-stream answer: each message an object of its fields)."""
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The event's id: send it back as Last-Event-ID"},
            "event": {"type": "string", "description": "The event's type"},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data_schema},
            "retry": {"type": ["integer", "string"], "description": "Milliseconds before reconnecting"},
        },
    }


Reader = Callable[[int, int], list[EventOut]]  # (after, limit) -> the events after ``after``


class EventStream:
    """A WSGI response body: the SSE messages of the events ``read`` gives after ``after``.

    ``on_close`` (the slot's release) runs once, when the server closes the body."""

    def __init__(
        self,
        read: Reader,
        after: int,
        limits: StreamLimits,
        environ: dict,
        on_close: Callable[[], None],
    ) -> None:
        self._read = read
        self._after = after
        self._limits = limits
        self._environ = environ
        self._on_close: Callable[[], None] | None = on_close
        self._pieces = self._messages()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._pieces)
        except StopIteration:
            self.close()
            raise
        except Exception as exc:  # headers are sent: the stream can only end. Say why.
            log_failure(self._environ, exc)
            self.close()
            raise

    def _messages(self) -> Iterator[bytes]:
        limits = self._limits
        started = last_sent = time.monotonic()
        yield f"retry: {RETRY_MILLISECONDS}\n\n".encode()
        while time.monotonic() - started < limits.max_seconds:
            events = self._read(self._after, BATCH)
            if events:
                self._after = event_sequence(events[-1].id) or self._after
                last_sent = time.monotonic()
                yield b"".join(frame(event) for event in events)
                if len(events) == BATCH:
                    continue  # more are waiting: no pause
            elif time.monotonic() - last_sent >= limits.keepalive_seconds:
                last_sent = time.monotonic()
                yield b": keep-alive\n\n"
            left = limits.max_seconds - (time.monotonic() - started)
            yield self._pause(max(0.0, min(limits.poll_seconds, left)))

    def _pause(self, seconds: float) -> bytes:
        if self._environ.get(PAUSE_KEY):
            return Pause(seconds)  # the engine waits, no thread held
        time.sleep(seconds)  # another WSGI server (tests in process): this thread waits
        return b""

    def close(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class Streams:
    """The event streams of one process: their slots and limits (from ``ServerSettings``)."""

    def __init__(self, per_process: int, per_caller: int, max_seconds: float) -> None:
        self.slots = StreamSlots(per_process, per_caller)
        self.limits = StreamLimits(max_seconds=max_seconds, per_process=per_process, per_caller=per_caller)

    def respond(
        self, environ: dict, organization_id: str | None, query: EventQuery, headers: dict[str, str]
    ) -> bottle.HTTPResponse:
        """The stream of ``query``'s events (one organization's, or every one's for None), in
        a slot of the caller's: refused before any byte when the slots are full."""
        after = events.resolve_after(start_after(query, environ.get("HTTP_LAST_EVENT_ID")), organization_id)
        types = query.type

        def read(since: int, limit: int) -> list[EventOut]:
            return events.read_after(since, limit, organization_id=organization_id, types=types)

        release = self.slots.acquire(caller_of_environ(environ))
        environ[STREAM_KEY] = True
        body = EventStream(read, after, self.limits, environ, release)
        response = bottle.HTTPResponse(body=body, status=200, headers=headers)
        response.content_type = CONTENT_TYPE
        response.set_header("Cache-Control", "no-cache")
        response.set_header("X-Accel-Buffering", "no")  # a proxy in front must pass each event on
        return response
