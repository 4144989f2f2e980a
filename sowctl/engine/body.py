"""Reading a request's body whole on the event loop, within its limit, deadline and the
worker's cap on buffered bodies: no thread is held while a client sends slowly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sowctl.engine.hooks import Refusal

MALFORMED_CHUNKED_BODY = "malformed chunked body"
INCOMPLETE_BODY = "the request body ended before its announced length"
NOT_IN_TIME = "the request was not received in time"
BUFFERS_FULL = "too many large requests at once; retry later"


class Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def too_large(limit: int) -> Refusal:
    return Refusal(413, f"request body too large: the limit is {limit} bytes", limit=limit)


class BodyBuffers:
    """Bytes of request bodies a worker holds, beyond ``free`` bytes per request, at most
    ``cap`` at once; a body that would pass the cap is refused, unless no other large one is
    held (a single upload larger than the cap, such as a dataset, still goes through)."""

    def __init__(self, cap: int, free: int) -> None:
        self.cap = cap
        self.free = free
        self.total = 0
        self._counted: dict[int, int] = {}

    def hold(self, request: int, size: int) -> bool:
        wanted = max(0, size - self.free)
        have = self._counted.get(request, 0)
        others = self.total - have
        if wanted > have and others and others + wanted > self.cap:
            return False
        self.total = others + wanted
        if wanted:
            self._counted[request] = wanted
        return True

    def release(self, request: int) -> None:
        self.total -= self._counted.pop(request, 0)


async def read_body(
    receive: Callable[[], Awaitable[dict[str, Any]]],
    *,
    limit: int,
    timeout: float,
    buffers: BodyBuffers,
    request: int,
    chunked: bool,
) -> bytes:
    """The whole body; :class:`Refused` (408, 413, 503, 400) when it cannot be taken."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    body = bytearray()
    while True:
        remaining = deadline - loop.time()
        try:
            if remaining <= 0:
                raise TimeoutError
            message = await asyncio.wait_for(receive(), remaining)
        except TimeoutError:
            raise Refused(Refusal(408, NOT_IN_TIME)) from None
        if message.get("type") == "http.disconnect":
            # The parser reports a malformed chunk, and a body cut short, as a disconnect.
            raise Refused(Refusal(400, MALFORMED_CHUNKED_BODY if chunked else INCOMPLETE_BODY))
        chunk = message.get("body") or b""
        if chunk:
            if len(body) + len(chunk) > limit:
                raise Refused(too_large(limit))
            if not buffers.hold(request, len(body) + len(chunk)):
                raise Refused(Refusal(503, BUFFERS_FULL, retry_after=1))
            body += chunk
        if not message.get("more_body", False):
            return bytes(body)
