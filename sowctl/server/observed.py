"""What the server keeps of each request it answers: its metrics and, when tracing, its span.

Counted when the server closes the answer's body (sent, or the client gone), so a streamed
report's time includes its sending. A request is named by its route's template, never by the
path asked for, so the metrics' series stay as few as the routes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import bottle

from sowctl import operations
from sowctl.server import tracing
from sowctl.server.access_log import close_app_body
from sowctl.server.metrics import NO_GROUP, UNMATCHED, Metrics
from sowctl.server.responses import REQUEST_ID_KEY

_PARAMETER = re.compile(r"<([^:>]+)(?::[^>]*)?>")
ADMIN_PREFIX = "/_admin"


class Observation:
    """One request: started now, finished (counted, its span ended) once by :meth:`finish`."""

    def __init__(self, router: bottle.Router, metrics: Metrics, environ: dict[str, Any]) -> None:
        self.router = router
        self.metrics = metrics
        self.environ = environ
        self.started = time.perf_counter()
        self.status = "-"
        self.span = tracing.start_span(environ)
        self._done = False

    def start_response(self, start_response: Callable[..., Any]) -> Callable[..., Any]:
        def observing(status: str, headers: Any, exc_info: Any = None) -> Any:
            self.status = status.split(" ", 1)[0]
            return start_response(status, headers, exc_info)

        return observing

    def finish(self, status: str | None = None) -> None:
        if self._done:
            return
        self._done = True
        route, group = self._route()
        status = status or self.status
        method = str(self.environ.get("REQUEST_METHOD", ""))
        self.metrics.request(route, group, method, status, time.perf_counter() - self.started)
        if self.span is not None:
            tracing.end_span(self.span, route, status, self.environ.get(REQUEST_ID_KEY))

    def _route(self) -> tuple[str, str]:
        """The template and group of the route that took the request; ``unmatched`` for none."""
        route = self.environ.get("bottle.route")
        if route is None:  # answered before routing (a fault the test double injected)
            try:
                route, _ = self.router.match(self.environ)
            except bottle.HTTPError:
                return UNMATCHED, NO_GROUP
        template = _PARAMETER.sub(r"{\1}", route.rule)
        op = operations.REGISTRY.get(route.name) if isinstance(route.name, str) else None
        if op is not None:
            return template, op.group
        return template, "admin" if template.startswith(ADMIN_PREFIX) else NO_GROUP


class ObservedBody:
    """The application's answer, passed through; the request is finished when it is closed."""

    def __init__(self, body: Iterable[bytes], observation: Observation) -> None:
        self._body = body
        self._observation = observation

    def __iter__(self) -> Any:
        return iter(self._body)

    def close(self) -> None:
        try:
            close_app_body(self._body)
        finally:
            self._observation.finish()
