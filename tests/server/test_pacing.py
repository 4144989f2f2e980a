"""The bound on sending a response (sowctl.server.pacing) and how the access log marks a body
that was not sent whole. The real server with a slow reader: tests/server/test_slow_readers.py."""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Iterator

import pytest

from sowctl.server.access_log import AccessLog
from sowctl.server.pacing import PIECE_BYTES, PacedSocket, TooSlow

KIB = 1024


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def test_the_allowance_is_the_grace_plus_a_second_per_rate_bytes_less_the_time_waited(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    paced = PacedSocket(pair[0], send_timeout=30.0, min_send_rate=64 * KIB)
    assert paced.allowance(64 * KIB) == 30.0  # each send: at most send_timeout
    paced.sent, paced.waited = 640 * KIB, 40.0  # 10 s of sending earned, 40 s waited
    assert paced.allowance(64 * KIB) == pytest.approx(1.0)  # 30 + 11 - 40
    paced.waited = 41.5
    assert paced.allowance(64 * KIB) < 0
    with pytest.raises(TooSlow):
        paced.sendall(b"x")  # behind already: nothing more is sent
    assert paced.too_slow and paced.sent == 640 * KIB
    unbounded = PacedSocket(pair[0], send_timeout=30.0, min_send_rate=0)
    unbounded.sent, unbounded.waited = 0, 10_000.0
    assert unbounded.allowance(1) == 30.0  # 0: only send_timeout


def test_a_send_not_taken_in_time_fails_as_too_slow(pair: tuple[socket.socket, socket.socket]) -> None:
    server, _client = pair  # the client never reads
    paced = PacedSocket(server, send_timeout=0.2, min_send_rate=64 * KIB)
    with pytest.raises(TooSlow):
        for _ in range(1000):  # until the socket buffers are full
            paced.sendall(b"x" * 64 * KIB)
    assert paced.too_slow and paced.waited > 0
    assert isinstance(TooSlow(), TimeoutError)  # the worker's "client gone" path: no traceback


def test_sends_and_files_taken_in_time_go_through_whole(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    paced = PacedSocket(server, send_timeout=5.0, min_send_rate=64 * KIB)
    data = bytes(range(256)) * 4096  # 1 MiB
    received = bytearray()

    def read() -> None:
        while len(received) < 2 * len(data):
            received.extend(client.recv(65536))

    reader = threading.Thread(target=read)
    reader.start()
    paced.sendall(data)  # in pieces of PIECE_BYTES, each with its own send_timeout
    assert paced.sendfile(io.BytesIO(b"0123456789" + data), offset=10) == len(data)
    reader.join(5)
    assert bytes(received) == data * 2
    assert paced.sent == 2 * len(data) and not paced.too_slow
    assert paced.fileno() == server.fileno()  # everything else is the socket's own


class _Recorder:
    """A socket that takes everything at once, recording each send and its timeout."""

    def __init__(self) -> None:
        self.sends: list[bytes] = []
        self.timeouts: list[float] = []

    def gettimeout(self) -> float | None:
        return None

    def settimeout(self, seconds: float) -> None:
        self.timeouts.append(seconds)

    def sendall(self, data: memoryview) -> None:
        self.sends.append(bytes(data))


def test_a_large_write_is_sent_in_pieces_each_with_its_own_timeout() -> None:
    recorder = _Recorder()
    paced = PacedSocket(recorder, send_timeout=30.0, min_send_rate=64 * KIB)  # type: ignore[arg-type]
    data = bytes(range(256)) * (2 * PIECE_BYTES // 256) + b"tail"
    paced.sendall(data)
    assert b"".join(recorder.sends) == data
    assert [len(piece) for piece in recorder.sends] == [PIECE_BYTES, PIECE_BYTES, 4]
    # Each piece may take send_timeout (the rate allows more): set once, not per piece.
    assert recorder.timeouts == [30.0] and paced.sent == len(data)
    paced.waited = 33.0  # behind: 30 + 8 + 64 KiB / 64 KiB/s - 33 s = 6 s for the next piece
    paced.sendall(b"x" * 64 * KIB)
    assert recorder.timeouts == [30.0, pytest.approx(6.0, abs=0.01)]


def _logged(capsys: pytest.CaptureFixture[str], body: list[bytes], read: int, environ: dict) -> str:
    def app(environ: dict, start_response: object) -> list[bytes]:
        start_response("200 OK", [])  # type: ignore[operator]
        return body

    environ = {"REMOTE_ADDR": "10.0.0.1", "REQUEST_METHOD": "GET", "PATH_INFO": "/x", **environ}
    logged = AccessLog(app)(environ, lambda status, headers, exc_info=None: None)
    chunks = iter(logged)
    for _ in range(read):
        next(chunks, None)
    if read > len(body):
        assert next(chunks, None) is None
    logged.close()  # type: ignore[attr-defined]
    return capsys.readouterr().err


def test_the_access_log_marks_a_body_not_sent_whole(capsys: pytest.CaptureFixture[str]) -> None:
    whole = _logged(capsys, [b"ab", b"cd"], 3, {})
    assert " 200 4 " in whole and whole.endswith("ms\n")
    cut = _logged(capsys, [b"ab", b"cd"], 1, {})  # the server stopped after the first piece
    assert " 200 2 " in cut and cut.endswith("ms cut-short\n")
    paced = PacedSocket(socket.socket(), send_timeout=1.0, min_send_rate=1)
    paced.too_slow = True
    slow = _logged(capsys, [b"ab", b"cd"], 1, {"gunicorn.socket": paced})
    assert slow.endswith("ms cut-short:too-slow\n")
    paced.close()
