"""``WebhookReceiver``: a local HTTP endpoint that collects webhook deliveries, for tests.

Point a subscription at ``receiver.url``; every POST is kept as a :class:`Delivery` (headers,
body, the event it carries, whether its Standard Webhooks signature verified against the
receiver's secret) and answered with the next status queued by ``respond`` (200 otherwise),
so a test can make the receiver fail and watch the service retry. ``wait_for`` blocks until a
delivery of a matching event arrives, and fails with the closest deliveries when none does:

    receiver.wait_for("item.created", data={"title": "Walls"})

Bounded: a body over ``MAX_BODY_BYTES`` is refused with 413 unread, and at most
``MAX_KEPT`` deliveries are kept (the oldest are dropped first).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from sowctl.testing.matching import differences, no_match_message

MAX_BODY_BYTES = 1024 * 1024
MAX_KEPT = 10_000


@dataclass(frozen=True)
class Delivery:
    """One POST the receiver got."""

    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes
    status: int  # what the receiver answered
    signature_valid: bool | None  # None: the receiver has no secret to check with
    received_at: float = field(default_factory=time.time)

    @property
    def event(self) -> dict[str, Any]:
        """The delivered event (the body's JSON object; empty when the body is not one)."""
        try:
            value = json.loads(self.body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


class WebhookReceiver:
    """A receiver on ``127.0.0.1`` and a free port, until ``close()`` (or the ``with`` block ends)."""

    def __init__(self, secret: str | None = None, *, authorization: str | None = None) -> None:
        self.secret = secret
        self.authorization = authorization
        self._deliveries: deque[Delivery] = deque(maxlen=MAX_KEPT)
        self._statuses: deque[int] = deque()
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        serving = threading.Thread(target=self._server.serve_forever, name="webhook-receiver", daemon=True)
        serving.start()

    @staticmethod
    def new_secret() -> str:
        """A fresh Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
        return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/webhooks"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what the test controls and reads --------------------------------------------------

    def respond(self, *statuses: int) -> None:
        """Answer the next deliveries with these statuses, in order (then 200 again)."""
        with self._changed:
            self._statuses.extend(statuses)

    @property
    def deliveries(self) -> list[Delivery]:
        with self._changed:
            return list(self._deliveries)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events of the deliveries the receiver accepted (2xx), in arrival order."""
        return [d.event for d in self.deliveries if 200 <= d.status < 300]

    def clear(self) -> None:
        with self._changed:
            self._deliveries.clear()

    def wait_for(self, type: str | None = None, *, timeout: float = 5.0, **fields: Any) -> Delivery:
        """The first accepted delivery whose event matches ``type`` and ``fields`` (each a subset:
        ``data={"title": "Walls"}``), waiting up to ``timeout`` seconds for it. Raises
        AssertionError naming the closest deliveries when none arrives, or when the matching
        one's signature did not verify."""
        __tracebackhide__ = True
        pattern = {**({"type": type} if type is not None else {}), **fields}
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._first_match(pattern)
                if found is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [d.event for d in self._deliveries]
                    raise AssertionError(no_match_message("delivery", pattern, seen, timeout))
                self._changed.wait(left)
        if found.signature_valid is False:
            event_id = found.event.get("id")
            raise AssertionError(f"the delivery of {event_id} has a signature that does not verify")
        return found

    def _first_match(self, pattern: dict[str, Any]) -> Delivery | None:
        """The first delivery of a matching event that was accepted, or refused for its
        signature (which fails the wait: the service signed it wrongly)."""
        for delivery in self._deliveries:
            answered = 200 <= delivery.status < 300 or delivery.signature_valid is False
            if answered and not differences(pattern, delivery.event):
                return delivery
        return None

    # --- called by the HTTP handler ----------------------------------------------------------

    def _accept(self, path: str, headers: dict[str, str], body: bytes) -> int:
        valid = self._signature_valid(headers, body)
        with self._changed:
            status = self._statuses.popleft() if self._statuses else 200
            if valid is False:
                status = 401
            self._deliveries.append(Delivery(path, headers, body, status, valid))
            self._changed.notify_all()
        return status

    def _signature_valid(self, headers: dict[str, str], body: bytes) -> bool | None:
        if self.authorization is not None:
            return headers.get("authorization") == self.authorization
        if self.secret is None:
            return None
        try:
            Webhook(self.secret).verify(body, headers, json_parse=False)
        except (WebhookVerificationError, ValueError):
            return False
        return True


def _handler_for(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._answer(413)
                return
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            self._answer(receiver._accept(self.path, headers, body))

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a test's output is not the place for an access log

    return Handler
