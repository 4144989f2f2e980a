"""Reading HTTP answers off a raw socket, for tests that write requests byte by byte (slow,
pipelined or oversized clients) to a real server."""

from __future__ import annotations

import socket

_LEFTOVER: dict[int, bytes] = {}  # bytes read past one answer, per socket (pipelining)


def read_answer(sock: socket.socket, *, head_only: bool = False) -> tuple[str, dict[str, str], bytes]:
    """Status line, headers and body of one response (Content-Length framed)."""
    data = _LEFTOVER.pop(sock.fileno(), b"")
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    length = 0 if head_only else int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the middle of a body"
        body += chunk
    _LEFTOVER[sock.fileno()] = body[length:]
    return status, headers, body[:length]


def closed_url() -> str:
    """The URL of a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
