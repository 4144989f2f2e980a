"""The server's Prometheus metrics (``GET /metrics``), written by the ``prometheus_client`` library.

Every label takes its values from a small fixed set, so what a client sends can never make a
new series: the route's template (``/api/items/{id}``, never the path asked for; ``unmatched``
for a path no route takes), the operation's group (``A``, ``B``, ``C``; ``admin`` for
``/_admin``; ``-`` for the server's own routes), the method (``other`` for one HTTP does not
define) and the status.

``sowctl serve`` runs several worker processes. Each writes its counts to files in a directory
the server makes for the run and removes when it stops (:func:`shared_directory`, the library's
multiprocess mode), and ``/metrics`` adds up every worker's, whichever worker answers. Outside
``serve`` (tests, the app embedded elsewhere) each app counts in a registry of its own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
UNMATCHED = "unmatched"
NO_GROUP = "-"
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})

# What the engine refuses before the application runs, by status: each is a per-request budget.
ENGINE_REFUSALS = {
    400: "framing",
    401: "upload-credential",
    408: "body-timeout",
    413: "body-size",
    414: "request-line",
    431: "header-size",
    503: "busy",
}
SLOT_KINDS = ("write", "report")
DATABASE_ERRORS = ("conflict", "busy", "unavailable", "storage", "unexpected")
# Seconds; a slot wait is bounded by ServerSettings' write_slot_wait and report_slot_wait.
SLOT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)


class Metrics:
    """The counters and histograms of one application (one worker under ``serve``)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.multiprocess = _use_multiprocess_values()
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "sowctl_http_requests",
            "HTTP requests answered, by route template, group, method and status.",
            ("route", "group", "method", "status"),
            registry=r,
        )
        self.duration = Histogram(
            "sowctl_http_request_duration_seconds",
            "Time from the application receiving a request to the end of sending its answer.",
            ("route", "group"),
            registry=r,
        )
        self.rate_limited = Counter(
            "sowctl_rate_limit_refusals", "Requests refused (429) for their API key's rate.", (), registry=r
        )
        self.budget_refusals = Counter(
            "sowctl_budget_refusals",
            "Requests refused for a per-request budget: a body, line or header block too large, "
            "a body too slow, or no thread or buffer free in time.",
            ("reason",),
            registry=r,
        )
        self.slot_waits = Counter(
            "sowctl_slot_waits", "Requests that found every slot of their kind taken.", ("kind",), registry=r
        )
        self.slot_refusals = Counter(
            "sowctl_slot_refusals", "Requests refused (503) after waiting for a slot.", ("kind",), registry=r
        )
        self.slot_wait_seconds = Histogram(
            "sowctl_slot_wait_seconds",
            "Time waited for a slot, by those that waited.",
            ("kind",),
            buckets=SLOT_BUCKETS,
            registry=r,
        )
        self.database_errors = Counter(
            "sowctl_database_errors", "Requests failed by the database, by kind.", ("kind",), registry=r
        )
        self.event_deliveries = Counter(
            "sowctl_event_deliveries", "Attempts to deliver an event, by outcome.", ("outcome",), registry=r
        )
        self._zero_known_series()

    def _zero_known_series(self) -> None:
        """Series whose label values are known up front exist from the start, at 0: a rate
        over them needs no special case for "never happened yet"."""
        for reason in sorted(set(ENGINE_REFUSALS.values())):
            self.budget_refusals.labels(reason)
        for kind in SLOT_KINDS:
            self.slot_waits.labels(kind)
            self.slot_refusals.labels(kind)
        for kind in DATABASE_ERRORS:
            self.database_errors.labels(kind)

    # --- recording ----------------------------------------------------------------------

    def request(self, route: str, group: str, method: str, status: str, seconds: float) -> None:
        method = method if method in HTTP_METHODS else "other"
        self.requests.labels(route, group, method, status).inc()
        self.duration.labels(route, group).observe(seconds)

    def engine_refusal(self, status: int) -> None:
        self.budget_refusals.labels(ENGINE_REFUSALS.get(status, "other")).inc()

    def slot_wait(self, kind: str, seconds: float, refused: bool) -> None:
        self.slot_waits.labels(kind).inc()
        self.slot_wait_seconds.labels(kind).observe(seconds)
        if refused:
            self.slot_refusals.labels(kind).inc()

    def database_error(self, kind: str) -> None:
        self.database_errors.labels(kind if kind in DATABASE_ERRORS else "unexpected").inc()

    def event_delivery(self, outcome: str) -> None:
        """One attempt to deliver an event: ``delivered``, ``failed``, ``timeout``, ``dropped``."""
        self.event_deliveries.labels(outcome).inc()

    # --- reading ------------------------------------------------------------------------

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes: every worker's counts added up under ``serve``."""
        from prometheus_client import CollectorRegistry, generate_latest

        if not self.multiprocess:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)


def _use_multiprocess_values() -> bool:
    """Whether this process counts in the shared directory (``serve``'s workers). The library
    chooses when it is first imported; a process that imported it before the directory was
    set (a server started inside a test run) is switched here, before any metric exists."""
    if not os.environ.get(MULTIPROCESS_ENV):
        return False
    from prometheus_client import values

    if not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()
    return True


# The variable's value before the server set it, while it runs (``serve --exec``'s command
# gets that one: its own programs must not write into the server's directory).
_before: dict[str, str | None] = {}


@contextlib.contextmanager
def shared_directory() -> Iterator[str]:
    """A directory of the workers' counts for one run of the server, removed afterwards."""
    directory = tempfile.mkdtemp(prefix="sowctl-metrics-")
    saved = os.environ.get(MULTIPROCESS_ENV)
    _before[directory] = saved
    os.environ[MULTIPROCESS_ENV] = directory
    try:
        yield directory
    finally:
        if saved is None:
            os.environ.pop(MULTIPROCESS_ENV, None)
        else:
            os.environ[MULTIPROCESS_ENV] = saved
        _before.pop(directory, None)
        shutil.rmtree(directory, ignore_errors=True)


def environment_without_ours(environ: dict[str, str]) -> dict[str, str]:
    """``environ`` with the metrics directory variable as it was before a server set it."""
    current = environ.get(MULTIPROCESS_ENV)
    if current not in _before:
        return environ
    before = _before[current]
    rest = {name: value for name, value in environ.items() if name != MULTIPROCESS_ENV}
    return rest if before is None else {**rest, MULTIPROCESS_ENV: before}
