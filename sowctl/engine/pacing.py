"""How long the engine waits for a client to take a response: a minimum average send rate.

A per-send deadline alone (``send_timeout``) lets a client that takes one piece every 29 s
keep a response, and whatever the application holds for it (a report slot), for hours on a
large answer. :class:`Pace` adds a bound on the whole: the time spent waiting for the client
to take the response may not pass ``send_timeout`` plus one second per ``min_send_rate``
bytes sent (the piece being sent included). Past it, or when one piece is not taken within
``send_timeout``, the engine stops sending and the connection is closed; the client sees a
body that ends early.

Only the time spent waiting in sends counts, not the time the application takes to make the
next piece (a database read between two batches): the bound is on the client. What sits in
the connection's buffers counts as sent, so a client may fall behind by their size (a few
MiB) on top of the grace.
"""

from __future__ import annotations

from dataclasses import dataclass

# Larger bodies are sent in pieces of at most this size, each with its own deadline.
PIECE_BYTES = 256 * 1024


@dataclass
class Pace:
    send_timeout: float
    min_send_rate: int
    sent: int = 0
    waited: float = 0.0

    def allowance(self, size: int) -> float:
        """Seconds the next send of ``size`` bytes may take (0 or less: the client is too slow)."""
        allowed = self.send_timeout
        if self.min_send_rate > 0:
            allowed = min(allowed, self.send_timeout + (self.sent + size) / self.min_send_rate - self.waited)
        return allowed

    def record(self, size: int, seconds: float) -> None:
        self.sent += size
        self.waited += seconds


def pieces(data: bytes) -> list[bytes]:
    """``data`` cut to ``PIECE_BYTES`` (an empty body is one empty piece)."""
    if len(data) <= PIECE_BYTES:
        return [data]
    with memoryview(data) as view:
        return [bytes(view[at : at + PIECE_BYTES]) for at in range(0, len(data), PIECE_BYTES)]
