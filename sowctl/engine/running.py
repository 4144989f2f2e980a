"""The part of a request a thread does: run the WSGI application, and make its answer's pieces.

What a thread hands back is an :class:`Answer`: the status, the headers and the first pieces
of the body (up to ``PIECE_BYTES``); a longer body is made piece by piece by further calls
(:func:`advance`), each in the caller's turn, and sent between them. An answer made whole in
the first call is also closed in it (PEP 3333's ``close()``: the access log line, a slot
released), so an ordinary request costs one trip to a thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sowctl.engine.hooks import Pause
from sowctl.engine.pacing import PIECE_BYTES

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class Dropped(Exception):
    """The application asked for the connection to be cut without an answer."""


@dataclass
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: Iterable[bytes]
    iterator: Iterator[bytes] | None
    pieces: list[bytes] = field(default_factory=list)
    done: bool = False
    wait: float = 0.0  # seconds to let pass before the next pieces are asked for (a Pause)


def start(app: WSGIApp, environ: dict[str, Any], head_only: bool) -> Answer:
    """Run ``app`` and make the first pieces of its answer (none for a HEAD request)."""
    captured: list[tuple[str, list[tuple[str, str]]]] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        if exc_info is not None and captured and written:
            raise exc_info[1].with_traceback(exc_info[2])
        captured[:] = [(status, headers)]
        return written.append

    try:
        body = app(environ, start_response)
    except ConnectionError:  # the test double's "drop" fault: cut the connection, answer nothing
        raise Dropped from None
    iterator = iter(body)
    answer = Answer(0, [], body, iterator)
    try:
        if head_only:
            answer.done = True
        else:
            answer.pieces, answer.done, answer.wait = pull(iterator)
    except BaseException:
        close(body)
        raise
    if written:
        answer.pieces[:0] = written
    if not captured:
        close(body)
        raise RuntimeError("the application did not start a response")
    status, headers = captured[0]
    answer.status = int(status.split(" ", 1)[0])
    answer.headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    if answer.done:
        close(body)
    return answer


def advance(answer: Answer) -> None:
    """The next pieces of a streamed answer (closed once it ends)."""
    assert answer.iterator is not None
    try:
        answer.pieces, answer.done, answer.wait = pull(answer.iterator)
    except BaseException:
        answer.done = True
        close(answer.body)
        raise
    if answer.done:
        close(answer.body)


def pull(iterator: Iterator[bytes], budget: int = PIECE_BYTES) -> tuple[list[bytes], bool, float]:
    """Pieces of ``iterator`` until they make ``budget`` bytes or it pauses; whether it
    ended; how long it asked to pause (0: ask again at once)."""
    pieces: list[bytes] = []
    size = 0
    for piece in iterator:
        if type(piece) is Pause:
            return pieces, False, piece.seconds
        if piece:
            pieces.append(piece)
            size += len(piece)
            if size >= budget:
                return pieces, False, 0.0
    return pieces, True, 0.0


def close(body: Iterable[bytes]) -> None:
    closer = getattr(body, "close", None)
    if closer is not None:
        closer()


def timed(work: Callable[[], Any]) -> tuple[bool, Any, float]:
    """``(ok, result or exception, thread CPU seconds)`` of ``work``."""
    started = time.thread_time()
    try:
        result = work()
        ok = True
    except BaseException as exc:
        result, ok = exc, False
    return ok, result, time.thread_time() - started
