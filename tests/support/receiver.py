"""A webhook receiver for tests: a local HTTP server that records each POST and answers
with the status the test sets (``statuses``: the next answers, then ``default``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        return json.loads(self.body)


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.statuses: list[int] = []
        self.default = 200
        self.reply: bytes | None = None  # the answer's body (default: "answered STATUS")
        self.hold = 0.0  # seconds each answer waits before it is sent
        self.headers: dict[str, str] = {}  # sent with every answer (a redirect's Location)
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._lock:
                    receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
                    status = receiver.statuses.pop(0) if receiver.statuses else receiver.default
                time.sleep(receiver.hold)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                for name, value in receiver.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(receiver.reply or f"answered {status}".encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.05)
        raise AssertionError(f"expected {count} deliveries, got {len(self.received)}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def verify_standard_webhooks(secret: str, received: Received) -> bool:
    """The receiver's check of a Standard Webhooks signature: only hashlib, hmac and base64."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    msg_id = received.headers["webhook-id"]
    timestamp = received.headers["webhook-timestamp"]
    signed = f"{msg_id}.{timestamp}.".encode() + received.body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    sent = [part.split(",", 1)[1] for part in received.headers["webhook-signature"].split()]
    return any(hmac.compare_digest(expected, candidate) for candidate in sent)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()
