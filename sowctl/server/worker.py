"""The gunicorn worker of ``sowctl serve``: the event loop reads requests, threads only run them.

gunicorn's gthread worker hands a connection to a pool thread as soon as its first byte
arrives, and that thread then blocks reading the rest of the head and the body with no
deadline: four clients sending one header byte every two seconds held the four threads of
the default server, and nothing else was answered (bench/WSGI_SERVERS.md). Here the
worker's selector loop reads every connection without blocking, frames each request with
``sowctl.server.framing`` and applies the limits and deadlines itself:

* a connection that sends nothing is closed after ``idle_timeout`` (new and kept-alive
  connections alike);
* a request's head must be complete ``header_timeout`` after its first byte, its body
  ``body_timeout`` after the head, else 408;
* a request line over the limit is answered 414, a larger head 431, a body announced
  larger than the application's limit 413 at once, before any of it is read (a chunked
  one as soon as it passes the limit);
* answers are written in the group's JSON error envelope, with ``Connection: close``,
  and the connection lingers a little, draining, so the client reads the answer instead
  of a reset;
* a request gunicorn cannot parse gets such an answer too, 400 with a fixed message
  (``parse_failure``): gunicorn's own quotes the request, a token in it included.

Buffered bodies have a cap per worker (``max_buffered_bytes``): each connection may
buffer ``_FREE_BYTES`` (any head, any ordinary body) without counting; beyond that its
bytes count against the cap until its request has run, and a request that would pass
the cap is answered 503 with ``Retry-After``, unless it is the only large one (an admin
dataset upload larger than the cap). Such uploads are authenticated from their head
before their body is read (``SowctlBottle.body_limit``).

Only a complete request goes to the thread pool, where gunicorn parses it from memory and
runs the application; the thread writes the response (each piece bounded by ``send_timeout``,
the whole by ``min_send_rate``: ``sowctl.server.pacing``) and the connection comes back to
the loop for the next request. Slow or idle clients therefore cost a selector entry and a
buffer, never a thread, or only for as long as they keep taking the response.
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn.http import errors as parse_errors
from gunicorn.workers.base import Worker
from gunicorn.workers.gthread import ThreadWorker

from sowctl.errors import SowctlError
from sowctl.server.auth import uncharged_rate_headers
from sowctl.server.errors import HttpStatusError, InternalError, envelope, group_of_path
from sowctl.server.fairness import TakingTurns, caller_of
from sowctl.server.framing import Complete, Limits, Refusal, RequestFramer
from sowctl.server.http import EVERY_RESPONSE_HEADERS, MALFORMED_CHUNKED_BODY, json_bytes, too_large
from sowctl.server.pacing import PacedSocket, Writing
from sowctl.server.responses import new_request_id
from sowctl.server.settings import ServerSettings

# How long a closing connection is drained after the answer, so it is read, not reset.
LINGER_SECONDS = 2.0
# Kept-alive connections of a stopping worker stay this long, for a request already sent.
STOP_LINGER_SECONDS = 2.0
# Not more: recv(n) allocates n bytes first, and past 128 KiB that is an mmap and munmap
# per call (measured: 61 µs for recv(256 KiB) of a small request, 7 µs for recv(64 KiB)).
_RECV_BYTES = 64 * 1024
_SWEEP_EVERY = 0.25
_PARSE_PIECE = 1024 * 1024
# Bytes a connection buffers without counting against the worker's cap: more than any
# head (request line and headers), so that only large bodies ever wait for room.
_FREE_BYTES = 64 * 1024

IDLE, READING, BUSY, CLOSING = "idle", "reading", "busy", "closing"

_FRAMING_HEADERS = ("CONTENT-LENGTH", "TRANSFER-ENCODING")
_CHUNK_ERRORS = (
    parse_errors.InvalidChunkSize,
    parse_errors.ChunkMissingTerminator,
    parse_errors.InvalidChunkExtension,
)


def parse_failure(exc: BaseException) -> tuple[int, str, str] | None:
    """(status, reason, message) of a request gunicorn could not parse; None when ``exc`` is
    not the client's fault. The message is fixed: gunicorn's own quotes what was sent (a
    token in a malformed header line, the request line), which an answer must not echo."""
    if isinstance(exc, parse_errors.InvalidResponseHeader | parse_errors.InvalidResponseHeaderName):
        return None  # a header the application tried to send: its fault
    if isinstance(exc, parse_errors.ConfigurationProblem) or not isinstance(exc, parse_errors.ParseException):
        return None
    if isinstance(exc, parse_errors.LimitRequestLine):
        return 414, "URI Too Long", "request line too long"
    if isinstance(exc, parse_errors.LimitRequestHeaders):
        return 431, "Request Header Fields Too Large", "request header fields too large"
    if isinstance(exc, parse_errors.ExpectationFailed):
        return 417, "Expectation Failed", "only Expect: 100-continue is supported"
    if isinstance(exc, parse_errors.UnsupportedTransferCoding):
        return 501, "Not Implemented", "unsupported transfer coding (only chunked is)"
    if isinstance(exc, parse_errors.ForbiddenProxyRequest):
        return 403, "Forbidden", "request forbidden"
    if isinstance(exc, parse_errors.InvalidRequestLine):
        message = "malformed request line"
    elif isinstance(exc, parse_errors.InvalidRequestMethod):
        message = "invalid request method"
    elif isinstance(exc, parse_errors.InvalidHTTPVersion):
        message = "unsupported HTTP version"
    elif isinstance(exc, parse_errors.InvalidHeader) and str(exc.hdr).upper() in _FRAMING_HEADERS:
        message = "invalid or conflicting Content-Length or Transfer-Encoding header"
    elif isinstance(
        exc, parse_errors.InvalidHeader | parse_errors.InvalidHeaderName | parse_errors.ObsoleteFolding
    ):
        message = "malformed header"
    elif isinstance(exc, _CHUNK_ERRORS):
        message = MALFORMED_CHUNKED_BODY
    else:
        message = "malformed request"
    return 400, "Bad Request", message


class _Conn:
    """One client connection and what has been read of its next request."""

    __slots__ = ("buf", "client", "close_after", "counted", "deadline", "framer", "server", "sock", "state")

    def __init__(self, sock: socket.socket, client: Any, server: Any, framer: RequestFramer) -> None:
        self.sock = sock
        self.client = client
        self.server = server
        self.buf = bytearray()
        self.framer = framer
        self.state = IDLE
        self.deadline = 0.0
        self.close_after = False
        self.counted = 0  # bytes of this connection counted against the worker's cap


def make_worker_class(settings: ServerSettings, on_refusal: Callable[[Any, str, int], None]) -> type:
    """The worker class serving with ``settings``' limits and deadlines.

    ``on_refusal(client_address, request_line_start, status)`` is called for every
    request the loop answers itself (for the access log).
    """

    class ReadingWorker(ThreadWorker):
        def handle_quit(self, sig: int, frame: Any) -> None:
            # gthread's handler calls tpool.shutdown() from inside the signal handler;
            # when SIGINT/SIGQUIT lands while the main thread is in tpool.submit() (same
            # non-reentrant lock) the worker hangs until the master SIGKILLs it after
            # graceful_timeout (python/cpython#121649). The threads end with the process.
            Worker.handle_quit(self, sig, frame)

        def init_process(self) -> None:
            self.conns: set[_Conn] = set()
            self.limits = Limits(
                settings.max_request_line, settings.max_header_bytes, settings.max_body_bytes
            )
            self.next_sweep = 0.0
            self.buffered = 0  # bytes counted against settings.max_buffered_bytes
            self.turns = TakingTurns()  # complete requests waiting for a thread
            super().init_process()

        # --- the loop ----------------------------------------------------------------

        def new_framer(self) -> RequestFramer:
            return RequestFramer(self.limits, self.body_limit)

        def run(self) -> None:
            # The application's own body limit per path (SowctlBottle.body_limit), seen
            # through the access-log wrapper; settings.max_body_bytes for any other app.
            app: Any = self.wsgi
            while app is not None and not callable(getattr(app, "body_limit", None)):
                app = getattr(app, "app", None)
            self.body_limit = app.body_limit if app is not None else None
            self.poller.register(
                self.method_queue.fileno(), selectors.EVENT_READ, self.method_queue.run_callbacks
            )
            while self.alive:
                self.notify()
                self.set_accept_enabled(len(self.conns) < settings.max_connections)
                self.wait_for_and_dispatch_events(timeout=_SWEEP_EVERY)
                if not self.is_parent_alive():
                    break
                self.sweep()
            # Stopping: accept nothing more; idle connections close soon, requests under
            # way may finish within graceful_timeout.
            self.set_accept_enabled(False)
            stop_by = time.monotonic() + STOP_LINGER_SECONDS
            for conn in self.conns:
                if conn.state == IDLE:
                    conn.deadline = min(conn.deadline, stop_by)
            give_up = time.monotonic() + self.cfg.graceful_timeout
            while self.conns and time.monotonic() < give_up:
                self.notify()
                self.wait_for_and_dispatch_events(timeout=_SWEEP_EVERY)
                self.sweep()
            for conn in list(self.conns):
                self.close(conn)
            self.tpool.shutdown(wait=False)
            self.poller.close()
            self.method_queue.close()
            for listener in self.sockets:
                listener.close()

        def accept(self, listener: Any) -> None:
            # Take what the backlog holds (a burst of connections), up to the cap.
            while len(self.conns) < settings.max_connections:
                try:
                    sock, client = listener.accept()
                except OSError as exc:
                    if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                        return
                    raise
                sock.setblocking(False)
                conn = _Conn(sock, client, listener.getsockname(), self.new_framer())
                self.conns.add(conn)
                self.wait_for_request(conn, time.monotonic() + settings.idle_timeout)

        def wait_for_request(self, conn: _Conn, deadline: float) -> None:
            self.uncount(conn)
            conn.state = IDLE
            conn.deadline = deadline
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.readable, conn))
            if conn.buf:  # pipelined behind the previous request
                self.advance(conn)

        def readable(self, conn: _Conn, _sock: Any) -> None:
            try:
                data = conn.sock.recv(_RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # the client is gone (or stopped sending mid-request)
                self.close(conn)
                return
            if conn.state == CLOSING:
                return  # drained and dropped
            conn.buf += data
            if not self.count(conn):
                self.refuse(conn, 503, "Service Unavailable", "too many large requests at once; retry later")
                return
            self.advance(conn)

        def count(self, conn: _Conn) -> bool:
            """Count ``conn``'s buffer beyond ``_FREE_BYTES`` against the worker's cap;
            False when it does not fit (and other connections hold counted bytes)."""
            wanted = max(0, len(conn.buf) - _FREE_BYTES)
            others = self.buffered - conn.counted
            if wanted > conn.counted and others and others + wanted > settings.max_buffered_bytes:
                return False
            self.buffered = others + wanted
            conn.counted = wanted
            return True

        def uncount(self, conn: _Conn) -> None:
            """``conn``'s request has run (or it is closing): its bytes are free."""
            self.buffered -= conn.counted
            conn.counted = 0

        def advance(self, conn: _Conn) -> None:
            if conn.state == IDLE:
                # RFC 9112 section 2.2: empty lines before a request line are ignored.
                while conn.buf[:2] == b"\r\n" or conn.buf[:1] == b"\n":
                    del conn.buf[: 2 if conn.buf[:1] == b"\r" else 1]
                if not conn.buf:
                    return
                conn.state = READING
                conn.deadline = time.monotonic() + settings.header_timeout
            framer = conn.framer
            head_was_complete = framer.head_complete
            outcome = framer.scan(conn.buf)
            if framer.head_complete and not head_was_complete:
                conn.deadline = time.monotonic() + settings.body_timeout
                if framer.expects_continue and outcome is None:
                    self.send(conn, b"HTTP/1.1 100 Continue\r\n\r\n")
            if isinstance(outcome, Refusal):
                self.refuse(conn, outcome.status, outcome.reason, outcome.message)
            elif isinstance(outcome, Complete):
                with memoryview(conn.buf) as view, view[: outcome.end] as head_and_body:
                    request = bytes(head_and_body)  # one copy, even of a large body
                del conn.buf[: outcome.end]
                conn.close_after = outcome.close_after
                conn.framer = self.new_framer()
                conn.state = BUSY
                self.poller.unregister(conn.sock)
                self.turns.add(caller_of(request, conn.client), partial(self.run_and_report, conn, request))
                self.tpool.submit(self.turns.run_next)

        def run_and_report(self, conn: _Conn, request: bytes) -> None:
            """In a pool thread, when ``self.turns`` gives this request its turn."""
            keep_alive = False
            try:
                keep_alive = self.run_request(conn, request)
            finally:
                self.method_queue.defer(self.finished, conn, keep_alive)

        def sweep(self) -> None:
            now = time.monotonic()
            if now < self.next_sweep:
                return
            self.next_sweep = now + _SWEEP_EVERY
            for conn in [c for c in self.conns if c.state != BUSY and c.deadline <= now]:
                if conn.state == READING:
                    self.refuse(conn, 408, "Request Timeout", "the request was not received in time")
                else:  # idle past the keep-alive timeout, or done lingering
                    self.close(conn)

        # --- answers the loop gives itself ---------------------------------------------

        def refuse(self, conn: _Conn, status: int, reason: str, message: str) -> None:
            error = too_large(conn.framer.max_body) if status == 413 else HttpStatusError(status, message)
            self.send(conn, answer(RequestFramer.path(conn.buf), status, reason, error))
            on_refusal(conn.client, _request_line(conn.buf), status)
            self.linger(conn)

        def send(self, conn: _Conn, data: bytes) -> None:
            """Best effort, never blocking: a small answer fits the socket's buffer."""
            try:
                conn.sock.send(data)
            except OSError:
                pass

        def linger(self, conn: _Conn) -> None:
            """Half-close, then drain until the client closes or LINGER_SECONDS pass
            (RFC 9112 section 9.6): closing with unread bytes would reset the connection
            and could destroy the answer before the client reads it."""
            try:
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                self.close(conn)
                return
            conn.buf = bytearray()
            self.uncount(conn)
            if conn.state == BUSY:
                self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.readable, conn))
            conn.state = CLOSING
            conn.deadline = time.monotonic() + LINGER_SECONDS

        def close(self, conn: _Conn) -> None:
            if conn.state != BUSY:
                try:
                    self.poller.unregister(conn.sock)
                except (KeyError, ValueError, OSError):
                    pass
            self.conns.discard(conn)
            self.uncount(conn)
            try:
                conn.sock.close()
            except OSError:
                pass

        # --- a complete request, in a pool thread ---------------------------------------

        def run_request(self, conn: _Conn, request: bytes) -> bool:
            """Parse ``request`` (all of it is in memory) and run the application; whether
            the connection may serve another request."""
            req = None
            try:
                conn.sock.setblocking(True)
                conn.sock.settimeout(settings.send_timeout)  # a client that does not read
                # In pieces, so that a large body is not copied whole at every step of parsing.
                pieces = [request[at : at + _PARSE_PIECE] for at in range(0, len(request), _PARSE_PIECE)]
                req = next(http.get_parser(self.cfg, pieces, conn.client))
                # The loop already answered Expect: 100-continue, or read the whole body.
                req._expected_100_continue = False
                # The response goes through a PacedSocket: a client that reads too slowly is cut off.
                paced = PacedSocket(conn.sock, settings.send_timeout, settings.min_send_rate)
                writing = Writing(paced, conn.client, conn.server)
                return bool(self.handle_request(req, writing)) and not conn.close_after
            except (StopIteration, http.errors.NoMoreData):
                return False
            except OSError as exc:
                if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN) and not isinstance(
                    exc, TimeoutError
                ):
                    self.log.exception("Socket error processing request.")
                return False
            except Exception as exc:
                status = self.answer_failure(conn.sock, conn.client, RequestFramer.path(request), exc)
                if req is None:  # the application never saw it: nothing logged it yet
                    on_refusal(conn.client, _request_line(request), status)
                return False

        def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
            # gunicorn's own path to an error answer (not taken by run_request): the same one.
            self.answer_failure(client, addr, getattr(req, "path", None) or "/", exc)

        def answer_failure(self, sock: Any, client: Any, path: str, exc: BaseException) -> int:
            """Answer a request gunicorn could not parse (or run) in the group's envelope, with
            a fixed message: never gunicorn's, which quotes what was sent. Returns the status."""
            failure = parse_failure(exc)
            ip = client[0] if isinstance(client, tuple) and client else "-"
            if failure is None:
                self.log.exception("Error handling request")  # the error log is redacted
                status, reason, error = 500, "Internal Server Error", InternalError()
            else:
                status, reason, message = failure
                self.log.warning("Invalid request from ip=%s: %s (%s)", ip, message, type(exc).__name__)
                error = HttpStatusError(status, message)
            try:
                sock.sendall(answer(path, status, reason, error))
            except OSError:
                pass
            return status

        def finished(self, conn: _Conn, keep_alive: bool) -> None:
            """Back on the loop's thread after a request ran."""
            if conn not in self.conns:
                return
            try:
                conn.sock.setblocking(False)
            except OSError:
                keep_alive = False
            if keep_alive and self.alive:
                self.wait_for_request(conn, time.monotonic() + settings.idle_timeout)
            else:
                self.linger(conn)

    def answer(path: str, status: int, reason: str, error: SowctlError) -> bytes:
        """A whole response, closing the connection, to a request the application never saw:
        the envelope of ``path``'s group, X-Request-Id, and Group B's uncharged X-RateLimit-*."""
        group = group_of_path(path)
        response = envelope(group, error)
        body = json_bytes(response.body)
        headers = {"Connection": "close", "Content-Type": "application/json"}
        headers["X-Request-Id"] = new_request_id()
        headers.update(EVERY_RESPONSE_HEADERS)
        headers.update({**response.headers, **uncharged_rate_headers(group, settings)})
        headers["Content-Length"] = str(len(body))
        head = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers.items())]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body

    return ReadingWorker


def _request_line(buf: bytes | bytearray) -> str:
    """The request line at the start of ``buf``, as far as it was read (for the access log)."""
    return bytes(buf[:2048]).split(b"\n", 1)[0].decode("latin-1")
