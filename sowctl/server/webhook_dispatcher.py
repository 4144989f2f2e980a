"""The webhook dispatcher: a daemon thread in every ``sowctl serve`` worker that POSTs events.

Every ``POLL_SECONDS`` it asks the database, in one indexed query, which subscriptions have an
event (or a redelivery) due and are not leased (``services.webhook_dispatch.due``), claims
each with a lease (one attempt, one dispatcher, whatever the number of workers or servers on
the database) and hands it to one of its ``IN_FLIGHT`` sender threads, never to a request's
thread. A sender POSTs the event as JSON within ``TIMEOUT_SECONDS``, reads at most
``MAX_RESPONSE_BYTES`` of the answer, follows no redirect, and records the attempt: 2xx moves
the subscription's cursor, anything else schedules a retry on the service clock, or pauses the
subscription after its ``maxFailures``. Delivery faults (``services.webhook_faults``) are
applied here. Before each poll it re-reads the shared run-time state (``before_poll``: the test
double's clock set by ``/_admin/clock``, whichever worker took that request).

A sandbox's subscription (``Work.guarded``) is delivered to public addresses and the networks
the operator allows only (``services.webhook_destinations``): its host is resolved once, every
address checked, and the request sent to a checked address itself (the URL's host replaced by
it, the ``Host`` header and the TLS server name kept), so no second lookup can lead it
elsewhere (DNS rebinding). Such deliveries keep no connection open between attempts: a pooled
connection is found by address and would carry another host name's TLS session.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from sowctl.foundation import clock
from sowctl.foundation.redaction import mask_text
from sowctl.foundation.version import VERSION
from sowctl.services import webhook_destinations, webhook_dispatch, webhook_faults
from sowctl.services.webhook_dispatch import Attempt, Work
from sowctl.services.webhooks import secret_key

POLL_SECONDS = 0.2
IN_FLIGHT = 4
TIMEOUT_SECONDS = 5.0
BATCH = 50  # events one claim delivers in a row, at most, before the poll looks again
BATCH_SECONDS = 2.0  # and for how long (the lease lasts far longer)
MAX_RESPONSE_BYTES = 4096
# The answer's body is read for at most this long, however slowly it trickles in.
MAX_READ_SECONDS = 2 * TIMEOUT_SECONDS
USER_AGENT = f"sowctl/{VERSION}"


def signature_headers(work: Work, body: bytes, timestamp: int) -> dict[str, str]:
    """Standard Webhooks' headers, or the subscription's fixed Authorization value."""
    if work.signing == "authorization":
        return {"Authorization": work.credential}
    signed = f"{work.event.id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(work.credential), signed, hashlib.sha256).digest()
    return {
        "webhook-id": work.event.id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": "v1," + base64.b64encode(digest).decode("ascii"),
    }


class Dispatcher:
    """Polls, claims and sends; ``connect`` readies this thread's database connection and
    ``recover`` drops it after a failure (the app's own ``ensure_connection``/``recover_connection``)."""

    def __init__(
        self,
        connect: Callable[[], None],
        recover: Callable[[], None],
        *,
        before_poll: Callable[[], None] | None = None,
        count: Callable[[str], None] | None = None,
        poll_seconds: float = POLL_SECONDS,
        in_flight: int = IN_FLIGHT,
        timeout: float = TIMEOUT_SECONDS,
        allowed_networks: tuple[webhook_destinations.Network, ...] = (),
    ) -> None:
        self._connect = connect
        self._recover = recover
        self._before_poll = before_poll
        self._count = count or (lambda outcome: None)
        self._poll = poll_seconds
        self._slots = threading.BoundedSemaphore(in_flight)
        self._in_flight = in_flight
        self._senders = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="sowctl-webhook")
        self._stop = threading.Event()
        self._rng = random.Random()
        self.owner = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._http = httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False)
        self._guarded_http = httpx.Client(
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self._allowed = allowed_networks
        self._thread: threading.Thread | None = None
        self._warned = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sowctl-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * TIMEOUT_SECONDS)
        self._senders.shutdown(wait=True, cancel_futures=True)
        self._http.close()
        self._guarded_http.close()

    def settle(self, timeout: float) -> bool:
        """Wait until no attempt is in flight (tests, shutdown); False when ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        taken = 0
        try:
            while taken < self._in_flight:
                if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    return False
                taken += 1
            return True
        finally:
            for _ in range(taken):
                self._slots.release()

    # --- polling ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self.poll_once()
                self._warned = False
            except Exception as exc:  # the database is away or busy: try again next time
                self._recover()
                if not self._warned:
                    sys.stderr.write(f"sowctl: webhook dispatcher: {type(exc).__name__}; retrying\n")
                    self._warned = True

    def poll_once(self) -> int:
        """Claim what is due, as many as there are free senders; how many were claimed."""
        self._connect()
        if self._before_poll is not None:
            self._before_poll()
        free = self._free_slots()
        if free == 0:
            return 0
        claimed = 0
        for subscription_id in webhook_dispatch.due(clock.now(), time.time(), free):
            if not self._slots.acquire(blocking=False):
                break
            if not webhook_dispatch.claim(subscription_id, self.owner, time.time()):
                self._slots.release()
                continue
            claimed += 1
            self._senders.submit(self._attempt, subscription_id)
        return claimed

    def _free_slots(self) -> int:
        taken = 0
        while taken < self._in_flight and self._slots.acquire(blocking=False):
            taken += 1
        for _ in range(taken):
            self._slots.release()
        return taken

    # --- one attempt ------------------------------------------------------------------------

    def _attempt(self, subscription_id: str) -> None:
        """Deliver the subscription's next events while they succeed, at most ``BATCH`` of them
        and for at most ``BATCH_SECONDS``, under one lease, then record them all in one
        transaction: a backlog drains at the receiver's pace, and the database sees one write
        per batch, not two per event. Events sent but not yet recorded when the process dies
        are sent again (deliveries are at least once)."""
        try:
            self._connect()
            done: list[tuple[Work, list[Attempt]]] = []
            delivered_up_to: int | None = None
            failed = False
            ends = time.monotonic() + BATCH_SECONDS
            while len(done) < BATCH and not self._stop.is_set():
                work, skip_to = webhook_dispatch.next_work(subscription_id, self.owner, delivered_up_to)
                if work is None:
                    if not done:
                        webhook_dispatch.release(subscription_id, self.owner, skip_to)
                        return
                    break
                attempts, up_to = self._deliver(work)
                done.append((work, attempts))
                for attempt in attempts:
                    self._count(_metric_outcome(attempt))
                if up_to is None:
                    failed = True
                    break
                delivered_up_to = up_to
                if work.redelivery_id is not None or time.monotonic() > ends:
                    break
            if done:
                webhook_dispatch.finish_batch(done, self.owner, delivered_up_to, failed=failed)
        except Exception as exc:  # never the thread's end: give the lease back, or let it lapse
            self._recover()
            sys.stderr.write(f"sowctl: webhook {subscription_id}: {type(exc).__name__}\n")
            with contextlib.suppress(Exception):  # the database is away: the lease lapses instead
                self._connect()
                webhook_dispatch.release(subscription_id, self.owner)
        finally:
            self._slots.release()

    def _deliver(self, work: Work) -> tuple[list[Attempt], int | None]:
        """Send ``work`` as its faults say; (the attempts, the event delivered up to or None)."""
        faults = webhook_faults.draw(work.subscription_id, self._rng)
        if "delay" in faults:
            time.sleep((faults["delay"].delayMs or 0) / 1000)
        if "drop" in faults:
            return [
                Attempt(work.sequence, "dropped", error="dropped by a delivery fault", fault="drop")
            ], None
        attempts: list[Attempt] = []
        delivered_up_to = work.sequence
        if "reorder" in faults:
            after = webhook_dispatch.following(work)
            if after is not None:
                first = self._send(after, "reorder")
                attempts.append(first)
                if first.outcome != "delivered":
                    return attempts, None
                delivered_up_to = after.sequence
        fault = "delay" if "delay" in faults else None
        sent = self._send(work, fault)
        attempts.append(sent)
        if sent.outcome == "delivered" and "duplicate" in faults:
            attempts.append(self._send(work, "duplicate"))
        return attempts, (delivered_up_to if sent.outcome == "delivered" else None)

    def _send(self, work: Work, fault: str | None) -> Attempt:
        body = work.event.model_dump_json(by_alias=True).encode("utf-8")
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        if work.traceparent:  # the trace of the request that made the change goes on
            headers["traceparent"] = work.traceparent
        headers.update(signature_headers(work, body, int(time.time())))
        started = time.perf_counter()
        targets = [Target(work.url)]
        if work.guarded:
            pinned = webhook_destinations.pin(work.url, self._allowed)
            if pinned.refused is not None:  # nothing is sent: no answer to keep an excerpt of
                return Attempt(
                    work.sequence, "failed", error=pinned.refused, latency_ms=_ms(started), fault=fault
                )
            targets = pinned_targets(work.url, pinned.addresses)
        try:
            status, excerpt = self._post(targets, body, headers, started)
        except httpx.TimeoutException:
            return Attempt(work.sequence, "failed", error="timed out", latency_ms=_ms(started), fault=fault)
        except httpx.HTTPError as exc:
            return Attempt(work.sequence, "failed", error=_error(exc), latency_ms=_ms(started), fault=fault)
        outcome = "delivered" if 200 <= status < 300 else "failed"
        return Attempt(work.sequence, outcome, status, None, _ms(started), excerpt, fault)

    def _post(
        self, targets: list[Target], body: bytes, headers: dict[str, str], started: float
    ) -> tuple[int, str]:
        """POST to the first of ``targets`` that takes the connection: (status, excerpt)."""
        http = self._http if targets[0].pinned is None else self._guarded_http
        for index, target in enumerate(targets):
            try:
                with http.stream(
                    "POST",
                    target.url,
                    content=body,
                    headers={**headers, **target.headers},
                    extensions=target.extensions,
                ) as response:
                    return response.status_code, _read_some(response, started + MAX_READ_SECONDS)
            except httpx.ConnectError:
                if index == len(targets) - 1:
                    raise
        raise httpx.ConnectError("no address to connect to")


@dataclass(frozen=True)
class Target:
    """Where one POST goes: ``url`` as given, or (``pinned``) with its host replaced by a
    checked address, the ``Host`` header and the TLS server name still the URL's host."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)
    pinned: webhook_destinations.Address | None = None


def pinned_targets(url: str, addresses: tuple[webhook_destinations.Address, ...]) -> list[Target]:
    """``url`` sent to each checked address in turn (the next when one refuses the connection)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    targets = []
    for address in addresses:
        shown = f"[{address}]" if address.version == 6 else str(address)
        netloc = shown if parts.port is None else f"{shown}:{parts.port}"
        # An IP literal in the URL is already the address; a TLS server name is never one.
        named = webhook_destinations.ip_literal(host) is None
        extensions = {"sni_hostname": host} if named and parts.scheme == "https" else {}
        targets.append(
            Target(
                urlunsplit(parts._replace(netloc=netloc)),
                {"Host": parts.netloc} if named else {},
                extensions,
                address,
            )
        )
    return targets


def _read_some(response: httpx.Response, deadline: float) -> str:
    """At most ``MAX_RESPONSE_BYTES`` of the answer, until ``deadline``; the rest is never read."""
    kept = bytearray()
    for chunk in response.iter_bytes():
        kept += chunk[: MAX_RESPONSE_BYTES - len(kept)]
        if len(kept) >= MAX_RESPONSE_BYTES or time.perf_counter() > deadline:
            break
    return kept.decode("utf-8", "replace")


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _error(exc: Exception) -> str:
    """What went wrong, without the URL (which may carry a token in its query)."""
    detail = mask_text(str(exc))[:200]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _metric_outcome(attempt: Attempt) -> str:
    if attempt.outcome == "failed" and attempt.error == "timed out":
        return "timeout"
    return attempt.outcome


def start_for(app: Any) -> Dispatcher | None:
    """Start a dispatcher for ``sowctl serve``'s app (its database, metrics and test double)."""
    dispatcher = getattr(app, "dispatcher", None)
    if dispatcher is None:
        return None
    layer = getattr(app, "test_double", None)
    metrics = getattr(dispatcher, "metrics", None)
    webhooks = Dispatcher(
        dispatcher.ensure_connection,
        dispatcher.recover_connection,
        before_poll=layer.sync if layer is not None else None,
        count=metrics.event_delivery if metrics is not None else None,
        allowed_networks=dispatcher.settings.webhook_allowed_networks,
    )
    webhooks.start()
    return webhooks
