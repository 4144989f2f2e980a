"""A client that takes a large answer too slowly is cut off, and its report slot is free again.

Before: only each piece had a deadline (``send_timeout``, 30 s), so a client that took one
32 KiB piece every 29 s kept a report slot, and a thread, for hours on a large chain report;
three such clients took every report slot of a default worker, and every other report and
purchase-order page got 503. Now the whole answer must go at ``min_send_rate`` on average
after a grace of ``send_timeout`` (sowctl.engine.pacing).

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
from sowctl.schemas.purchase_orders import PurchaseOrderIn
from sowctl.schemas.sows import SowCreate
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.services import credentials, items, purchase_orders, sows
from sowctl.services.access import Caller
from sowctl.storage.database import close_database
from tests.support.client import wsgi_client
from tests.support.finance import COMPANY, ORG, PROJECT, build_finance, po_body

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
from sowctl.server.configuration import ServerSettings

db, grace, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
connections = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
settings = ServerSettings(
    send_timeout=grace, min_send_rate=rate, report_slots=1, report_slot_wait=0.2, max_connections=connections
)
serve(partial(create_app, db, settings), port=0, threads=2, on_ready=print, settings=settings)
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A SQLite file (``db``) whose chain report and page of purchase orders are each about 12 MB:
    for each, its path, headers and bytes (the application's, in process)."""
    db = tmp_path_factory.mktemp("slowread") / "big.db"
    app = create_app(str(db), ServerSettings())  # opens the database
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
        key = build_finance().key
        lines = [{"description": "\U0001f602" * 10_000, "amount": "1.05", "cost_code_id": 3}] * 10
        for _ in range(30):  # 400 KB each
            order = PurchaseOrderIn.model_validate(po_body(line_items=lines))
            purchase_orders.create_purchase_order(Caller.local(ORG), COMPANY, order)
        targets = {
            "chain": (f"/api/dependencies/chain?sowId={sow_id}", {"Authorization": f"Bearer {token}"}),
            "po": (
                f"/api/external/purchase-orders?project_id={PROJECT}&limit=100",
                {"x-api-key": key, "x-organization-id": ORG, "x-company-id": COMPANY},
            ),
        }
        found: dict[str, Any] = {"db": db}
        with wsgi_client(app) as client:
            for name, (path, headers) in targets.items():
                expected = client.get(path, headers=headers)
                assert expected.status_code == 200 and len(expected.content) > 10 * MIB
                found[name] = {"path": path, "headers": headers, "body": expected.content}
    finally:
        close_database()
    return found


@contextlib.contextmanager
def server(db: Path, connections: int = 1000) -> Iterator[tuple[str, IO[bytes]]]:
    """The script in a subprocess: (its URL, its stderr file with the access log)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(db), str(GRACE), str(RATE), str(connections)],
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


def _get(url: str, answer: dict[str, Any], pause: float = 0.0) -> tuple[int, bytes]:
    """(status, body) over http.client, the body read 256 KiB at a time with ``pause`` between."""
    parsed = httpx.URL(url)
    connection = http.client.HTTPConnection(parsed.host, parsed.port, timeout=NO_HANG)
    try:
        connection.request("GET", answer["path"], headers=answer["headers"])
        response = connection.getresponse()
        pieces = []
        while piece := response.read(256 * KIB):
            pieces.append(piece)
            time.sleep(pause)
        return response.status, b"".join(pieces)
    finally:
        connection.close()


class SlowReader:
    """A raw client of ``answer`` that reads ``SLOW_PIECE`` bytes every ``SLOW_PAUSE`` seconds."""

    def __init__(self, url: str, answer: dict[str, Any]) -> None:
        parsed = httpx.URL(url)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_PIECE)  # no large window
        self.sock.settimeout(NO_HANG)
        self.sock.connect((parsed.host, parsed.port))
        headers = "".join(f"{name}: {value}\r\n" for name, value in answer["headers"].items())
        self.sock.sendall(f"GET {answer['path']} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
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


@pytest.mark.parametrize("name", ["chain", "po"])
def test_a_reader_below_the_rate_is_cut_off_and_its_report_slot_freed(
    answers: dict[str, Any], name: str
) -> None:
    answer = answers[name]
    with server(answers["db"]) as (url, log):
        slow = SlowReader(url, answer)
        assert slow.received.startswith(b"HTTP/1.1 200")
        # It holds the only report slot while it reads: another large answer is refused.
        status, body = _get(url, answer)
        assert status == 503 and b"busy with other large answers" in body
        # It takes every piece in time, but less than RATE on average: the server cuts it off.
        deadline = time.monotonic() + NO_HANG
        while "cut-short:too-slow" not in _text(log) and time.monotonic() < deadline:
            time.sleep(0.2)
        cut = [line for line in _text(log).splitlines() if "cut-short" in line]
        assert len(cut) == 1, _text(log)
        assert f'"GET {answer["path"]} HTTP/1.1" 200 ' in cut[0], cut
        assert cut[0].endswith("ms cut-short:too-slow"), cut
        # The slot is free again: the next one is answered whole.
        status, body = _get(url, answer)
        assert status == 200 and body == answer["body"]
        # The slow client got what the server had sent, then the connection closed: a body that
        # ends early (no final chunk), short of the answer.
        received = slow.rest()
        assert not received.endswith(b"\r\n0\r\n\r\n")
        assert len(received) < len(answer["body"])
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert "Traceback" not in _text(log)


@pytest.mark.parametrize("name", ["chain", "po"])
def test_a_reader_that_keeps_up_gets_the_whole_body(answers: dict[str, Any], name: str) -> None:
    answer = answers[name]
    with server(answers["db"]) as (url, log):
        # About 5 MiB/s, with pauses longer than a send of a piece takes: above RATE on average.
        status, body = _get(url, answer, pause=0.05)
        assert status == 200 and body == answer["body"]
        for _ in range(2):  # the slot was freed: again, at full speed
            status, body = _get(url, answer)
            assert status == 200 and body == answer["body"]
        deadline = time.monotonic() + 5
        while _text(log).count(" 200 ") < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = [line for line in _text(log).splitlines() if answer["path"].split("?")[0] in line]
        assert len(lines) == 3 and not any("cut-short" in line for line in lines), lines


def test_clients_that_pipeline_requests_and_never_read_lose_their_connections(
    answers: dict[str, Any],
) -> None:
    """Each answer is handed to the HTTP server whole, and it has no deadline of its own for
    writing it: three connections that pipelined many requests and read nothing held every
    connection of a worker allowed three, for good. The kernel now drops a connection whose
    data stays unacknowledged for ``send_timeout`` (2 s here), and the others get in."""
    with server(answers["db"], connections=3) as (url, _log):
        parsed = httpx.URL(url)
        stuck = []
        for _ in range(3):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * KIB)
            sock.connect((parsed.host, parsed.port))
            sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 60)
            stuck.append(sock)
        try:
            started = time.monotonic()
            with httpx.Client(timeout=NO_HANG * 2) as client:
                assert client.get(url + "/healthz").status_code == 200
            assert time.monotonic() - started < NO_HANG * 2
        finally:
            for sock in stuck:
                sock.close()
