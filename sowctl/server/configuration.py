"""Tunable limits of the HTTP server, passed to ``create_app`` (and set by ``sowctl serve``)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sowctl.foundation import budgets

if TYPE_CHECKING:
    from sowctl.server.testdouble.faults import FaultConfig

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class ServerSettings:
    """Everything about serving that is not the database itself.

    Defaults: 100 requests per minute and 5,000 per
    day per API key, request bodies up to 1 MiB, pages of 20 (at most 100).
    """

    # Group B rate limits, per API key.
    rate_per_minute: int = 100
    rate_per_day: int = 5000
    # Request bodies above this are refused with 413.
    max_body_bytes: int = budgets.MAX_BODY_BYTES
    # Longest request line (method, target, version) and largest header block; past them
    # the server answers 414 and 431 before reading on. The line fits any id or query
    # value the API accepts (10,000 characters) with room for percent-encoding.
    max_request_line: int = 32 * KIB
    max_header_bytes: int = 16 * KIB
    # Deadlines of one connection, in seconds (bench/WSGI_SERVERS.md): a connection must send a
    # request's whole head within head_timeout of opening or of its previous answer (new, idle
    # and kept-alive connections alike), else it is closed; a body must arrive within
    # body_timeout of its head, else 408; a piece of a response not taken by the client within
    # send_timeout ends the response.
    head_timeout: float = 5.0
    body_timeout: float = 30.0
    send_timeout: float = 30.0
    # Bytes per second a client must take a response at, on average (sowctl.engine.pacing):
    # the server waits for it at most send_timeout plus one second per min_send_rate bytes
    # sent, then closes the connection. 64 KiB/s (about 525 kbit/s): a client on a 1 Mbit/s link
    # never falls behind, and a slow reader holds a thread (and a report slot) only for as
    # long as it keeps taking the body at that rate. 0: no bound beyond send_timeout.
    min_send_rate: int = 64 * KIB
    # Open connections per worker process; past it the worker accepts no more until some
    # close (the others wait in the listen backlog).
    max_connections: int = 1000
    # Bytes of request bodies one worker holds at once beyond 64 KiB per request
    # (sowctl.engine.body); a large body that would pass it is answered 503.
    max_buffered_bytes: int = 64 * MIB
    # A request that waited this many seconds for one of a worker's threads gets 503.
    queue_timeout: float = 30.0
    # The processor time one caller may take in a worker (sowctl.engine.usage): a burst of
    # cpu_burst seconds, refilled at cpu_share seconds per second. Past it, while other
    # callers want a thread, the caller runs one request at a time, after theirs. 0: no share.
    cpu_burst: float = 2.0
    cpu_share: float = 0.5
    # How long a thread runs Python before another may take the interpreter (Python's default
    # is 5 ms): a request waiting behind a processor-bound one waits up to this at each of its
    # database calls, so 0.5 ms keeps ordinary requests quick beside heavy ones
    # (bench/bench_cpu_share.py).
    switch_interval: float = 0.0005
    # Heavy requests run in helper processes of each worker, so that their long native calls
    # (parsing and validating a large body, serializing a long report) never hold the
    # interpreter ordinary requests need (sowctl.engine.heavy): heavy_processes helpers per
    # worker (0: none); a request is heavy when its body passes heavy_body_bytes, when it is a
    # report, or when its caller spent heavy_cpu seconds of its processor burst; a caller may
    # have heavy_queue heavy requests waiting for a helper (past it 503 with Retry-After).
    heavy_processes: int = 1
    heavy_body_bytes: int = 64 * KIB
    heavy_cpu: float = 0.5
    heavy_queue: int = 2
    # The share of SQLite's write lock one caller may hold (sowctl.storage.lock_share): lock_burst
    # seconds of holds at once, refilled at lock_share seconds per second. Past it, while other
    # callers write, its writes wait for the refill (at most a second; longer: 429 with
    # Retry-After). Shared by the processes of one server. 0: no share. SQLite only: on
    # PostgreSQL each organization's writes take a lock of their own.
    lock_burst: float = 1.0
    lock_share: float = 0.25
    # Origins allowed to call the API from a browser ("*" for any); () disables CORS.
    cors_origins: tuple[str, ...] = ()
    # Whether the WSGI server writes an access log line per request (``serve --quiet``).
    access_log: bool = True
    # The access log's lines: "text" (one readable line) or "json" (one JSON object a line).
    log_format: str = "text"
    # Group A/B pagination: ``limit`` default and maximum (larger is clamped).
    default_limit: int = 20
    max_limit: int = budgets.MAX_PAGE_SIZE
    # Largest accepted ``page``: keeps offsets inside every backend's integer range.
    max_page: int = 10_000_000
    # Read-only operations retry transient database failures ("database is locked")
    # this many times in all before answering 503.
    read_attempts: int = 3
    # Write requests that may wait for the database at once in one worker process; the
    # others queue for a slot while writes keep finishing, and are answered 503 after a
    # whole ``write_slot_wait`` seconds in which none did (the database is held up).
    # ``serve`` sets it to its threads minus one, so that writes queued behind a lock
    # never hold every thread and reads keep being answered. None: no limit (in process).
    # The wait is seconds, not less: one API key's Group B requests take its lock in turn,
    # and on a busy machine the other worker may hold it for a while (that is progress,
    # which this worker cannot see): half a second refused such requests as "busy".
    write_slots: int | None = None
    write_slot_wait: float = 2.0
    # Whole-SOW reports (operations flagged ``report``: the chain) running at once in one
    # worker process, their bodies' sending included; ``serve`` sets threads minus one, so
    # that /healthz and ordinary requests always find a thread. A further one waits for a
    # slot while reports keep finishing, and is answered 503 after ``report_slot_wait``
    # seconds in which none did (sowctl.server.slots). None: no limit (in process).
    report_slots: int | None = None
    report_slot_wait: float = 0.5
    # Server-Sent Events streams of the changes feed (sowctl.server.event_stream): open at
    # once in one worker process and per caller (past them 503 / 429 with Retry-After), and
    # how long one lasts before it ends (the client reconnects with Last-Event-ID).
    event_streams: int = 32
    event_streams_per_caller: int = 4
    event_stream_seconds: float = 300.0
    # Events kept in the outbox, the oldest pruned first (serve --event-retention); 0: none
    # are recorded (sowctl.services.events).
    event_retention: int = 100_000
    # Networks the webhooks of a sandbox's organization may reach besides public addresses
    # (serve --webhook-allow-network; sowctl.services.webhook_destinations): a shared server
    # whose CI jobs run their webhook receivers on the same host allows 127.0.0.1/32.
    webhook_allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    # --- the test double (``serve --admin ...``; sowctl.server.testdouble.layer) -------------
    # Bearer token of the /_admin API; None: no /_admin routes at all (404).
    admin_token: str | None = None
    # Latency and faults injected from the start (/_admin/faults changes them at run time).
    faults: FaultConfig | None = None
    # A frozen clock (naive UTC) from the start (/_admin/clock changes it at run time).
    fixed_now: datetime | None = None
    # Reproducible ids and secrets (clock.seed) in the worker; one worker only.
    seed: int | None = None
    # Append every successful mutating API request to this JSON-lines file.
    record_path: str | None = None
    # Rows kept in the request log (GET /_admin/requests), oldest pruned first.
    request_log_size: int = 1000
    # Contract mode: "report" marks each request that relies on more than the service's
    # description (a response header); "strict" refuses one with 400; "off" does neither.
    contract: str = "off"

    @property
    def test_double(self) -> bool:
        """Whether any test-double feature is on (then ``create_app`` installs the layer)."""
        return bool(
            self.admin_token
            or (self.faults is not None and self.faults.active)
            or self.fixed_now is not None
            or self.seed is not None
            or self.record_path
            or self.contract != "off"
        )
