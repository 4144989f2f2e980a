"""A streamed response body (a chain report) as the test double passes it on: chunk by chunk,
keeping only what the request log stores of it, with the log row and the gate's release done
when the server closes it (``sowctl.server.testdouble.layer``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

# Of a streamed response, the request log keeps what its first bytes give (it stores at most
# state.MAX_BODY_CHARS characters of a body, of up to 4 bytes each).
LOGGED_BYTES = 4 * 4096 + 4


class Watched:
    """A streamed response body passed on chunk by chunk. Keeps its first ``keep`` bytes and,
    when the server closes it, calls ``finish(first_bytes, complete)`` (complete: the whole
    body is in ``first_bytes``), then ``release``."""

    def __init__(
        self,
        body: Iterable[bytes],
        release: Callable[[], None] | None,
        finish: Callable[[bytes, bool], None] | None = None,
        keep: int = 0,
    ) -> None:
        self._body = body
        self._release = release
        self._finish = finish
        self._keep = keep
        self._head = bytearray()
        self._overflow = False
        self._ended = False  # iterated to its end (not cut short by a client that went away)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._body:
            if self._finish is not None:
                room = self._keep - len(self._head)
                if len(chunk) > room:
                    self._overflow = True
                self._head += chunk[: max(0, room)]
            yield chunk
        self._ended = True

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
            if self._finish is not None:
                self._finish(bytes(self._head), self._ended and not self._overflow)
        finally:
            if self._release is not None:
                self._release()
