"""A client that takes a large answer too slowly is cut off, and its report slot is free again.

Before: only each piece had a deadline (``send_timeout``, 30 s), so a client that took one
32 KiB piece every 29 s kept a report slot, and a thread, for hours on a large chain report;
three such clients took every report slot of a default worker, and every other report and
purchase-order page got 503. Now the whole answer must go at ``min_send_rate`` on average
after a grace of ``send_timeout`` (sowctl.server.pacing).

The server runs with small settings (a grace of 2 s, 2 MiB/s) so that a reader at 256 KiB/s,
which takes every piece well within the grace, is cut off within seconds, while a reader
that keeps up gets the whole body.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from sowctl import operations
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.server.http import json_bytes
from sowctl.services import chain, credentials, items, sows
from sowctl.services.access import Caller

pytestmark = pytest.mark.slow  # a real server in a subprocess: the full suite only

ROOT = Path(__file__).resolve().parents[2]
MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")
NO_HANG = 15.0
KIB, MIB = 1024, 1024 * 1024
GRACE = 2.0  # send_timeout
RATE = 2 * MIB  # min_send_rate
SLOW_PIECE, SLOW_PAUSE = 64 * KIB, 0.25  # 256 KiB/s: each piece (at most 128 KiB) taken in time

# The production runner and app, with the settings above: one report slot (two threads).
SCRIPT = """
import sys
from functools import partial
from sowctl.server.app import create_app
from sowctl.server.runner import serve
from sowctl.server.settings import ServerSettings

db, grace, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
settings = ServerSettings(send_timeout=grace, min_send_rate=rate, report_slots=1, report_slot_wait=0.2)
serve(partial(create_app, db, settings), port=0, threads=2, on_ready=print, settings=settings)
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A SQLite file whose chain report is about 12 MB: its path, URL path, token and bytes."""
    from sowctl.db import open_database

    db = tmp_path_factory.mktemp("slowread") / "big.db"
    database = open_database(str(db))
    try:
        sow_id = sows.create_sow(MEMBER, SowCreate(title="Big", id="sow-big")).id
        a, b = (
            items.create_item(MEMBER, sow_id, ItemCreate(title=char * 10_000, type="task_item")).id
            for char in ("\U0001f600", "\U0001f601")
        )
        body = {"sourceItemId": a, "targetItemId": b, "dependencyType": "related_to"}
        body |= {"riskLevel": "critical", "slaDate": "2020-01-01"}
        for _ in range(50):  # each one listed under dependencies, critical and overdue: 240 KB
            operations.call_local("deps.create", MEMBER, body=body)
        token = credentials.create_token("user-ada", "acme", "member").secret
        expected = json_bytes(chain.chain_report(MEMBER, sow_id))
    finally:
        database.close()
    assert len(expected) > 10 * MIB
    return {"db": db, "path": f"/api/dependencies/chain?sowId={sow_id}", "token": token, "body": expected}


@contextlib.contextmanager
def server(db: Path) -> Iterator[tuple[str, IO[bytes]]]:
    """The script in a subprocess: (its URL, its stderr file with the access log)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(db), str(GRACE), str(RATE)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode().strip()  # the URL, once it listens
            assert line.startswith("http://"), (line, _text(stderr))
            yield line, stderr
        finally:
            proc.kill()
            proc.wait(NO_HANG)


def _text(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


def _get(url: str, path: str, token: str, pause: float = 0.0) -> tuple[int, bytes]:
    """(status, body) over http.client, the body read 256 KiB at a time with ``pause`` between."""
    parsed = httpx.URL(url)
    connection = http.client.HTTPConnection(parsed.host, parsed.port, timeout=NO_HANG)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        pieces = []
        while piece := response.read(256 * KIB):
            pieces.append(piece)
            time.sleep(pause)
        return response.status, b"".join(pieces)
    finally:
        connection.close()


class SlowReader:
    """A raw client of ``path`` that reads ``SLOW_PIECE`` bytes every ``SLOW_PAUSE`` seconds."""

    def __init__(self, url: str, path: str, token: str) -> None:
        parsed = httpx.URL(url)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_PIECE)  # no large window
        self.sock.settimeout(NO_HANG)
        self.sock.connect((parsed.host, parsed.port))
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        self.received = bytearray(self.sock.recv(SLOW_PIECE))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stop.wait(SLOW_PAUSE):
            piece = self.sock.recv(SLOW_PIECE)
            if not piece:
                return
            self.received += piece

    def rest(self) -> bytes:
        """Stop pausing and read all that is left, until the server closes the connection."""
        self.stop.set()
        self.thread.join(NO_HANG)
        with contextlib.suppress(ConnectionResetError):
            while piece := self.sock.recv(1 << 20):
                self.received += piece
        self.sock.close()
        return bytes(self.received)


def test_a_reader_below_the_rate_is_cut_off_and_its_report_slot_freed(report: dict[str, Any]) -> None:
    path, token = report["path"], report["token"]
    with server(report["db"]) as (url, log):
        slow = SlowReader(url, path, token)
        assert slow.received.startswith(b"HTTP/1.1 200")
        # It holds the only report slot while it reads: another report is refused.
        status, body = _get(url, path, token)
        assert status == 503 and b"busy with other large answers" in body
        # It takes every piece in time, but less than RATE on average: the server cuts it off.
        deadline = time.monotonic() + NO_HANG
        while "cut-short:too-slow" not in _text(log) and time.monotonic() < deadline:
            time.sleep(0.2)
        cut = [line for line in _text(log).splitlines() if "cut-short" in line]
        assert len(cut) == 1, _text(log)
        line = cut[0]
        assert f'"GET {path} HTTP/1.1" 200 ' in line and line.endswith("ms cut-short:too-slow"), line
        # The slot is free again: the next report is answered whole.
        status, body = _get(url, path, token)
        assert status == 200 and body == report["body"]
        # The slow client got what the server had sent, then the connection closed: a body that
        # ends early (no final chunk), short of the report.
        received = slow.rest()
        assert not received.endswith(b"\r\n0\r\n\r\n")
        assert len(received) < len(report["body"])
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert "Traceback" not in _text(log)


def test_a_reader_that_keeps_up_gets_the_whole_body(report: dict[str, Any]) -> None:
    with server(report["db"]) as (url, log):
        # About 5 MiB/s, with pauses longer than a send of a piece takes: above RATE on average.
        status, body = _get(url, report["path"], report["token"], pause=0.05)
        assert status == 200 and body == report["body"]
        for _ in range(2):  # the slot was freed: again, at full speed
            status, body = _get(url, report["path"], report["token"])
            assert status == 200 and body == report["body"]
        deadline = time.monotonic() + 5
        while _text(log).count(" 200 ") < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = [line for line in _text(log).splitlines() if "/api/dependencies/chain" in line]
        assert len(lines) == 3 and not any("cut-short" in line for line in lines), lines
