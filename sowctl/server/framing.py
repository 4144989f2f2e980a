"""Where one HTTP/1.1 request ends in a stream of bytes, and whether it is within limits.

The worker's event loop (``sowctl.server.worker``) feeds each connection's bytes here as
they arrive, so no thread ever waits on a client: only a request that is complete, head
and body, goes to the thread pool, where gunicorn parses it from memory. This module
looks only at what framing needs (the request line's length, the end of the head,
``Content-Length``, ``Transfer-Encoding: chunked`` and ``Expect``); everything else about
the request (methods, versions, header syntax, chunk syntax) stays gunicorn's to judge.
When the head is framed in a way this module does not follow (conflicting or invalid
lengths, codings other than chunked), the request goes to gunicorn as it is, which
refuses it, and the connection is closed afterwards.

Stdlib only; nothing here touches a socket.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The end of the head: the first empty line (a bare LF is found too; gunicorn judges it).
_HEAD_ENDS = (b"\r\n\r\n", b"\n\n")
# (path, Authorization header or None) -> the largest body, or None: not from this caller.
BodyLimit = Callable[[str, str | None], int | None]
# A chunk-size line longer than this is not a chunk-size line (gunicorn refuses it).
_MAX_CHUNK_LINE = 4096


@dataclass(frozen=True)
class Limits:
    """What one request may be, in bytes."""

    max_request_line: int
    max_header_bytes: int
    max_body_bytes: int


@dataclass(frozen=True)
class Refusal:
    """The request cannot be served: answer ``status`` and close the connection."""

    status: int
    reason: str
    message: str


@dataclass(frozen=True)
class Complete:
    """The request is the first ``end`` bytes of the buffer.

    ``close_after``: the framing was left to gunicorn (it will most likely refuse the
    request), so where the next request would start is unknown: close afterwards.
    """

    end: int
    close_after: bool = False


class RequestFramer:
    """Scans one request incrementally; call :meth:`scan` with the whole buffer each time
    bytes arrive (the buffer only grows while the request is incomplete)."""

    def __init__(self, limits: Limits, body_limit: BodyLimit | None = None) -> None:
        """``body_limit(path, authorization)``: the largest body of a request to ``path``
        with that ``Authorization`` header, when it is not ``limits.max_body_bytes`` for
        every path; None when the path takes larger bodies, but not from this caller
        (one larger than ``limits.max_body_bytes`` is then refused 401 before it is read)."""
        self.limits = limits
        self._body_limit = body_limit
        self.max_body = limits.max_body_bytes  # this request's, once its head is complete
        self.head_end: int | None = None  # offset of the body, once the head is complete
        self.expects_continue = False  # Expect: 100-continue with a body to come
        self._scanned = 0  # where the search for the head's end resumes
        self._body_end: int | None = None  # Content-Length framing: where the request ends
        self._chunks: _ChunkScanner | None = None

    @property
    def head_complete(self) -> bool:
        return self.head_end is not None

    def scan(self, buf: bytes | bytearray) -> Complete | Refusal | None:
        """The outcome so far: complete, refused, or None (more bytes are needed)."""
        if self.head_end is None:
            outcome = self._scan_head(buf)
            if outcome is not None or self.head_end is None:
                return outcome
        if self._body_end is not None:
            return Complete(self._body_end) if len(buf) >= self._body_end else None
        assert self._chunks is not None
        return self._chunks.scan(buf)

    # --- the head ------------------------------------------------------------------

    def _scan_head(self, buf: bytes | bytearray) -> Complete | Refusal | None:
        limits = self.limits
        line_end = buf.find(b"\n", 0, limits.max_request_line + 2)
        if line_end < 0:
            return self._uri_too_long() if len(buf) > limits.max_request_line + 1 else None
        line = bytes(buf[:line_end]).rstrip(b"\r")
        if len(line) > limits.max_request_line:
            return self._uri_too_long()
        start = max(line_end - 1, self._scanned - 3)
        ends = [(at, at + len(mark)) for mark in _HEAD_ENDS if (at := buf.find(mark, start)) >= 0]
        head_limit = line_end + 1 + limits.max_header_bytes + 2
        if not ends:
            self._scanned = len(buf)
            return self._headers_too_large() if len(buf) > head_limit else None
        block_end, self.head_end = min(ends)
        if self.head_end > head_limit:
            return self._headers_too_large()
        return self._frame_body(bytes(buf[line_end + 1 : block_end]), line)

    @staticmethod
    def path(buf: bytes | bytearray) -> str:
        """The path of the request at the start of ``buf``, as far as it was read ("/" if
        none): enough to pick the error envelope of a refusal."""
        parts = bytes(buf[:4096]).split(b"\n", 1)[0].split(b" ", 2)
        if len(parts) < 2:
            return "/"
        target = parts[1].split(b"?", 1)[0].split(b"#", 1)[0]
        if b"://" in target:  # absolute form: keep the path
            target = b"/" + target.split(b"://", 1)[1].partition(b"/")[2]
        return target.decode("latin-1") or "/"

    def _uri_too_long(self) -> Refusal:
        return Refusal(
            414, "URI Too Long", f"request line too long: the limit is {self.limits.max_request_line} bytes"
        )

    def _headers_too_large(self) -> Refusal:
        return Refusal(
            431,
            "Request Header Fields Too Large",
            f"request header fields too large: the limit is {self.limits.max_header_bytes} bytes",
        )

    def _frame_body(self, header_block: bytes, request_line: bytes) -> Complete | Refusal | None:
        assert self.head_end is not None
        lengths: list[bytes] = []
        codings: list[bytes] = []
        expect = b""
        authorization: str | None = None
        lowered = header_block.lower()
        # Most requests (GETs) name none of the three: skip the walk over their headers.
        if b"content-length" in lowered or b"transfer-encoding" in lowered or b"expect" in lowered:
            for raw, original in zip(lowered.split(b"\n"), header_block.split(b"\n"), strict=True):
                name, colon, value = raw.partition(b":")
                if not colon:
                    continue
                name = name.strip()
                if name == b"content-length":
                    lengths.append(value.strip())
                elif name == b"transfer-encoding":
                    codings += [c.strip() for c in value.split(b",")]
                elif name == b"expect":
                    expect = value.strip()
                elif name == b"authorization":  # its value keeps its case: a secret
                    authorization = original.partition(b":")[2].strip().decode("latin-1")
        # A coding besides chunked (``gzip, chunked``): gunicorn would pass the still-encoded
        # body to the application; the only transfer coding served is chunked alone.
        if codings and codings[-1] == b"chunked" and len(codings) > 1 and not lengths:
            return Refusal(400, "Bad Request", "unsupported transfer coding (only chunked is)")
        # Framing this module does not follow (gunicorn refuses these): hand the head over.
        if codings and (lengths or codings[-1] != b"chunked"):
            return Complete(self.head_end, close_after=True)
        if len(set(lengths)) > 1 or (lengths and not (lengths[0].isascii() and lengths[0].isdigit())):
            return Complete(self.head_end, close_after=True)
        http10 = request_line.endswith(b"HTTP/1.0")
        refused_caller = False
        if self._body_limit is not None:
            limit = self._body_limit(self.path(request_line), authorization)
            refused_caller = limit is None
            self.max_body = self.limits.max_body_bytes if limit is None else limit
        if codings:
            self._chunks = _ChunkScanner(self.head_end, self.limits.max_header_bytes, self.max_body)
            self.expects_continue = expect == b"100-continue" and not http10
            return None
        length = int(lengths[0]) if lengths and len(lengths[0]) < 20 else (10**20 if lengths else 0)
        if length > self.max_body:
            if refused_caller:  # checked before a byte of a large upload is buffered
                return Refusal(401, "Unauthorized", "a body this large needs a valid admin token")
            return Refusal(413, "Content Too Large", "")  # the message is the application's
        self._body_end = self.head_end + length
        self.expects_continue = expect == b"100-continue" and length > 0 and not http10
        return None


class _ChunkScanner:
    """Finds the end of a chunked body (RFC 9112 section 7.1) without decoding it."""

    def __init__(self, start: int, max_trailer_bytes: int, max_body_bytes: int) -> None:
        self.pos = start
        self.start = start
        self.max_trailer_bytes = max_trailer_bytes
        self.max_body_bytes = max_body_bytes
        self.decoded = 0
        self.remaining = 0  # bytes of the current chunk's data and its CRLF still to come
        self.in_trailer = False

    def scan(self, buf: bytes | bytearray) -> Complete | Refusal | None:
        while True:
            if self.remaining:
                step = min(self.remaining, len(buf) - self.pos)
                self.pos += step
                self.remaining -= step
                if self.remaining:
                    return None
            line_end = buf.find(b"\n", self.pos, self.pos + _MAX_CHUNK_LINE + 2)
            if line_end < 0:
                if len(buf) - self.pos > _MAX_CHUNK_LINE:
                    return Complete(len(buf), close_after=True)  # gunicorn answers the bad chunk
                return None
            line = bytes(buf[self.pos : line_end]).rstrip(b"\r")
            self.pos = line_end + 1
            if self.in_trailer:
                if not line:
                    return Complete(self.pos)
                if self.pos - self.start - self.decoded > self.max_body_bytes + self.max_trailer_bytes:
                    return Refusal(413, "Content Too Large", "")
                continue
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16) if size_text and len(size_text) <= 16 else -1
            except ValueError:
                size = -1
            if size < 0:
                return Complete(self.pos, close_after=True)  # gunicorn answers the bad chunk
            if size == 0:
                self.in_trailer = True
                continue
            self.decoded += size
            # Decoded size, and the framing around it (tiny chunks, long extensions).
            if self.decoded > self.max_body_bytes or self.pos - self.start > 2 * self.max_body_bytes:
                return Refusal(413, "Content Too Large", "")
            self.remaining = size + 2
