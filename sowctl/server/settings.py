"""Tunable limits of the HTTP server, passed to ``create_app`` (and set by ``sowctl serve``)."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class ServerSettings:
    """Everything about serving that is not the database itself.

    Defaults are the contract's (§7, §8): 100 requests per minute and 5,000 per
    day per API key, request bodies up to 1 MiB, pages of 20 (at most 100).
    """

    # Group B rate limits, per API key (contract §7.3).
    rate_per_minute: int = 100
    rate_per_day: int = 5000
    # Request bodies above this are refused with 413 (contract §7.1).
    max_body_bytes: int = MIB
    # A refused or unread body is read and dropped up to this size, so that the client
    # gets the answer and can reuse the connection; past it the server just closes.
    drain_bytes: int = 8 * MIB
    # Origins allowed to call the API from a browser ("*" for any); () disables CORS.
    cors_origins: tuple[str, ...] = ()
    # Whether the WSGI server writes an access log line per request (``serve --quiet``).
    access_log: bool = True
    # Group A/B pagination (contract §7.2): ``limit`` default and maximum (larger is clamped).
    default_limit: int = 20
    max_limit: int = 100
    # Largest accepted ``page``: keeps offsets inside every backend's integer range.
    max_page: int = 10_000_000
    # Read-only operations retry transient database failures ("database is locked")
    # this many times in all before answering 503.
    read_attempts: int = 3
