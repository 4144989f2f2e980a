"""sowctl events listen: forward a server's webhook deliveries to a local URL while it runs.

It starts a small HTTP listener on 127.0.0.1 (a free port), subscribes it to the
organization's events (remote mode: through the admin API; local mode: in the database, where
a ``sowctl serve`` on that database delivers), and forwards each delivery to ``--forward-to``
with its body and signature headers unchanged. It answers the server with the receiver's
status, so a failing receiver is retried as any subscriber is; one line per delivery. On exit
(Ctrl-C, SIGTERM) the subscription is deleted.
"""

from __future__ import annotations

import json
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any

import httpx
import typer

from sowctl.commands._context import app_context
from sowctl.commands.webhooks import AdminToken, Subscriptions
from sowctl.foundation.budgets import MAX_BODY_BYTES
from sowctl.output.cells import text
from sowctl.output.terminal import current
from sowctl.services.webhooks import check_url

FORWARDED_HEADERS = (
    "content-type",
    "user-agent",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "authorization",
)
# Within the server's own 5 s, so the receiver's answer, not the server's timeout, is what counts.
FORWARD_TIMEOUT = 4.5


class Forwarder:
    """The local listener: each POST is forwarded to ``target`` and its answer's status returned."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.client = httpx.Client(timeout=FORWARD_TIMEOUT, follow_redirects=False, trust_env=False)
        self._print = threading.Lock()
        forwarder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                forwarder.handle(self)

            def log_message(self, *args: Any) -> None:  # one line per delivery is printed instead
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = request.headers.get("Content-Length", "0")
        size = int(length) if length.isascii() and length.isdigit() and len(length) < 12 else -1
        if not 0 <= size <= MAX_BODY_BYTES:
            self._answer(request, 413)
            return
        body = request.rfile.read(size)
        headers = {
            name: value for name in FORWARDED_HEADERS if (value := request.headers.get(name)) is not None
        }
        try:
            status: int | str = self.client.post(self.target, content=body, headers=headers).status_code
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        self._answer(request, status if isinstance(status, int) else 502)
        self._line(headers.get("webhook-id"), body, status)

    def _answer(self, request: BaseHTTPRequestHandler, status: int) -> None:
        request.send_response(status)
        request.send_header("Content-Length", "0")
        request.end_headers()

    def _line(self, event_id: str | None, body: bytes, status: int | str) -> None:
        event_type = ""
        try:
            parsed = json.loads(body)
            event_type, event_id = parsed.get("type", ""), event_id or parsed.get("id")
        except (ValueError, AttributeError):
            pass
        with self._print:
            out = current().out
            out.write(f"{text(event_id)}  {text(event_type)}  -> {text(status)}\n")
            out.flush()

    def serve(self) -> None:
        threading.Thread(target=self.server.serve_forever, name="sowctl-listen", daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()


def listen(
    ctx: typer.Context,
    forward_to: Annotated[
        str, typer.Option("--forward-to", help="Where each delivery is forwarded (http:// or https://).")
    ],
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event", help="An event type (item.created) or dependency.*; repeat it. None: every event."
        ),
    ] = None,
    org: Annotated[
        str | None,
        typer.Option("--org", help="Whose events (default: the profile's org).", show_default=False),
    ] = None,
    admin_token: AdminToken = None,
) -> None:
    """Forward webhook deliveries to a local URL until Ctrl-C; the subscription goes with it.

    Prints the signing secret (the forwarded deliveries are signed with it) and one line per
    delivery with the receiver's status. The server must reach 127.0.0.1 on this machine.

    Example: sowctl events listen --forward-to http://127.0.0.1:5000/hooks --event item.created
    """
    target = check_url(forward_to, "--forward-to")
    subscriptions = Subscriptions(app_context(ctx), admin_token, "events listen")
    forwarder = Forwarder(target)
    forwarder.serve()
    body = {
        "url": forwarder.url,
        "organizationId": subscriptions.organization(org),
        "eventTypes": event or None,
    }
    try:
        created = subscriptions.create(body)
    except BaseException:
        forwarder.close()
        raise
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    out = current().out
    out.write(
        f"Forwarding {text(created['organizationId'])} events to {text(target)} ({text(created['id'])})\n"
    )
    out.write(f"Signing secret: {text(created['secret'])}\n")
    out.flush()
    try:
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        try:
            subscriptions.delete(created["id"])
        finally:
            forwarder.close()
    out.write(f"Deleted {text(created['id'])}\n")
