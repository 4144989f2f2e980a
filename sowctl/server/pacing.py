"""How long the worker waits for a client to take a response: a minimum average send rate.

A response is written by a thread with blocking sends (gunicorn's ``Response.write``,
``sendall``). A per-send timeout alone (``send_timeout``) lets a client that takes one
piece every 29 s keep the thread, and a report slot (``sowctl.server.slots``), for hours
on a large streamed answer: three such clients held every report slot of a default
worker. :class:`PacedSocket` adds a bound on the whole: the time spent waiting for the
client to take the response may not pass ``send_timeout`` plus one second per
``min_send_rate`` bytes sent (the piece being sent included). Past it, or when one piece
(what the writer hands over, cut to ``PIECE_BYTES``) is not taken within ``send_timeout``,
the send fails with :class:`TooSlow` (a ``TimeoutError``, which the worker treats as a
client gone), the server stops writing and closes the connection, and the thread and any
slot are free again; the client sees a body that ends early. The access log marks the line
``cut-short:too-slow`` (``too_slow``, read through ``environ["gunicorn.socket"]``).

Only the time blocked in sends counts, not the time the application takes to make the
next piece (a database read between two batches of purchase orders): the bound is on
the client, and a slow database has deadlines of its own. The send buffers of both ends
hold what the client has not read yet, and count as sent; that lets a client fall behind
by their size (up to a few MiB: the kernel's ``tcp_wmem`` maximum, 4 MiB on Linux by default)
on top of the grace, so a client reading at a quarter of the rate is cut after about
twice the grace plus the buffers' worth at the rate (an audit: 16 KiB/s cut after about
88 s, not 40 s). Counting what the client really read would need the kernel's unsent
count per send; the bound stays a bound on the thread and the slot either way.
"""

from __future__ import annotations

import socket
import time
from typing import Any, BinaryIO

# Larger writes (an answer built whole, such as a dataset export) are sent in pieces of this
# size, each with its own send_timeout; files (gunicorn's sendfile path: the web console's
# assets) are read in pieces of this size.
PIECE_BYTES = 256 * 1024


class TooSlow(TimeoutError):
    """The client took the response too slowly: the server stops sending it."""


class PacedSocket:
    """``sock`` as a response's writer sees it: ``sendall`` (and ``sendfile``) bounded as the
    module doc says; everything else is the socket's own. One per response."""

    def __init__(self, sock: socket.socket, send_timeout: float, min_send_rate: int) -> None:
        self._sock = sock
        self._send_timeout = send_timeout
        self._min_send_rate = min_send_rate
        self.sent = 0  # bytes handed to the kernel, headers included
        self.waited = 0.0  # seconds spent blocked in sends
        self.too_slow = False  # the connection was cut for it
        self._timeout = sock.gettimeout()

    def allowance(self, size: int) -> float:
        """Seconds the next send of ``size`` bytes may take."""
        allowed = self._send_timeout
        if self._min_send_rate > 0:
            by_rate = self._send_timeout + (self.sent + size) / self._min_send_rate - self.waited
            allowed = min(allowed, by_rate)
        return allowed

    def sendall(self, data: Any) -> None:
        with memoryview(data) as view, view.cast("B") as octets:
            for at in range(0, len(octets), PIECE_BYTES):
                with octets[at : at + PIECE_BYTES] as piece:
                    self._send_piece(piece)

    def _send_piece(self, data: memoryview) -> None:
        size = data.nbytes
        allowed = self.allowance(size)
        if allowed <= 0:
            self.too_slow = True
            raise TooSlow("the client takes the response too slowly")
        if allowed != self._timeout:  # mostly send_timeout, as set already: no system calls
            self._sock.settimeout(allowed)
            self._timeout = allowed
        started = time.monotonic()
        try:
            self._sock.sendall(data)
        except TimeoutError:
            self.too_slow = True
            raise TooSlow("the client takes the response too slowly") from None
        finally:
            self.waited += time.monotonic() - started
        self.sent += size

    def settimeout(self, seconds: float | None) -> None:
        self._sock.settimeout(seconds)
        self._timeout = seconds

    def sendfile(self, file: BinaryIO, offset: int = 0, count: int | None = None) -> int:
        """Like ``socket.sendfile``, through ``sendall``: bounded the same way."""
        file.seek(offset)
        total = 0
        while count is None or total < count:
            piece = file.read(PIECE_BYTES if count is None else min(PIECE_BYTES, count - total))
            if not piece:
                break
            self.sendall(piece)
            total += len(piece)
        return total

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class Writing:
    """What gunicorn's ``handle_request`` reads of a connection, with the paced socket."""

    __slots__ = ("client", "server", "sock")

    def __init__(self, sock: PacedSocket, client: Any, server: Any) -> None:
        self.sock = sock
        self.client = client
        self.server = server
