"""``sowctl serve``'s application on the engine: the API, worded and logged as the API does.

The engine (``sowctl.engine``) serves HTTP and knows nothing of the API. This module hands
it the application and the one small interface it asks for: how a refusal is worded (the
group's envelope, with ``X-Request-Id`` and, under ``/api/external``, uncharged
``X-RateLimit-*``), who a caller is (``server.callers``), how large a body a route takes
(``SowctlBottle.body_limit``), and the access log line of a refusal. Only the standard library
and the engine's small modules are imported until :func:`serve` runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sowctl.engine import Hooks, Limits, Refusal
from sowctl.engine.isolation import in_helper
from sowctl.server.access_log import WSGIApplication
from sowctl.server.configuration import ServerSettings

UNAUTHORIZED_UPLOAD = "a body this large needs a valid admin token"
# Seconds a process waits after its last SQLite write before it asks for the next turn.
WORKER_STEP_ASIDE = 0.0
HELPER_STEP_ASIDE = 0.01


def serve(
    app_factory: Callable[[], WSGIApplication],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    threads: int = 4,
    on_ready: Callable[[str], None] | None = None,
    access_log: bool = True,
    settings: ServerSettings | None = None,
) -> None:
    """Serve the app built by ``app_factory`` (once in every worker, after the fork) until
    SIGINT or SIGTERM, then return. ``settings``: the limits of requests (``ServerSettings``'
    defaults when None): pass the application's own, so both refuse the same bodies.
    ``on_ready(url)`` runs once as soon as the port accepts connections; ``port=0`` picks a free
    port. Raises ``OSError`` if the address is taken and ``SystemExit`` if the workers cannot
    start (``app_factory`` raises).

    The workers count their metrics in a directory made for this run and removed when it ends
    (``server.metrics``), so ``/metrics`` adds up every worker's; each worker traces requests
    when the ``OTEL_*`` variables ask for it (``server.tracing``)."""
    import sys

    from sowctl.engine.process import serve as run
    from sowctl.server import metrics, tracing, webhook_dispatcher
    from sowctl.storage import guards, lock_share

    settings = settings or ServerSettings()
    json_lines = settings.log_format == "json"

    def load() -> tuple[WSGIApplication, Hooks]:
        from functools import partial

        from sowctl.server.access_log import AccessLog, log_refusal

        tracing.start_from_environment()
        # A worker and its helper write one file; the helper's writes (heavy ones) let a
        # worker's writer that waits go first.
        guards.share_write_turns_between_processes(HELPER_STEP_ASIDE if in_helper() else WORKER_STEP_ASIDE)
        # Each credential's share of SQLite's write lock, one per server (a file beside the database).
        lock_share.enable(
            lock_share.Budget(settings.lock_burst, settings.lock_share) if settings.lock_share > 0 else None
        )
        app = app_factory()
        # Webhook deliveries are outbound work that must not slow the API: with helper
        # processes (niced, an interpreter of their own) each worker's helper makes them;
        # without, the worker does, on threads of its own.
        if in_helper() == (settings.heavy_processes > 0):
            webhook_dispatcher.start_for(app)
        served = AccessLog(app, json_lines=json_lines) if access_log else app
        hooks = Hooks(
            answer=lambda path, refusal: answer(path, refusal, settings),
            caller=_caller,
            body_limit=_body_limit_of(app),
            heavy=_app_method(app, "is_heavy"),
            on_refusal=_on_refusal(app, partial(log_refusal, json_lines=json_lines) if access_log else None),
        )
        return served, hooks

    warning = tracing.missing_sdk()
    if warning:
        sys.stderr.write(f"sowctl: {warning}\n")
    limits = engine_limits(settings, threads)
    with metrics.shared_directory():
        run(load, host=host, port=port, workers=workers, limits=limits, on_ready=on_ready)


def _on_refusal(app: Any, log: Callable[..., None] | None) -> Callable[..., None]:
    """Count a refusal the engine made itself in the app's metrics, and log it (``log``)."""
    counted = getattr(app, "dispatcher", None)

    def on_refusal(client: str, method: str, target: str, protocol: str, status: int, headers: Any) -> None:
        if counted is not None:
            counted.metrics.engine_refusal(status)
        if log is not None:
            log(client, method, target, protocol, status, headers)

    return on_refusal


def engine_limits(settings: ServerSettings, threads: int) -> Limits:
    return Limits(
        threads=threads,
        head_timeout=settings.head_timeout,
        body_timeout=settings.body_timeout,
        max_request_line=settings.max_request_line,
        max_header_bytes=settings.max_header_bytes,
        max_body_bytes=settings.max_body_bytes,
        send_timeout=settings.send_timeout,
        min_send_rate=settings.min_send_rate,
        max_connections=settings.max_connections,
        max_buffered_bytes=settings.max_buffered_bytes,
        queue_timeout=settings.queue_timeout,
        cpu_burst=settings.cpu_burst,
        cpu_share=settings.cpu_share,
        switch_interval=settings.switch_interval,
        heavy_processes=settings.heavy_processes,
        heavy_queue=settings.heavy_queue,
        heavy_cpu=settings.heavy_cpu,
    )


def answer(path: str, refusal: Refusal, settings: ServerSettings) -> tuple[list[tuple[str, str]], bytes]:
    """A refusal the engine makes itself, in the envelope of ``path``'s group."""
    from sowctl.server.auth import uncharged_rate_headers
    from sowctl.server.envelopes import HttpStatusError, envelope, group_of_path
    from sowctl.server.http import EVERY_RESPONSE_HEADERS, JSON_CONTENT_TYPE, json_bytes, too_large
    from sowctl.server.responses import new_request_id

    group = group_of_path(path)
    if refusal.status == 413 and refusal.limit is not None:
        error: Any = too_large(refusal.limit)
    else:
        error = HttpStatusError(refusal.status, refusal.message)
    response = envelope(group, error)
    headers = {"Content-Type": JSON_CONTENT_TYPE, "X-Request-Id": new_request_id()}
    headers.update(EVERY_RESPONSE_HEADERS)
    headers.update({**response.headers, **uncharged_rate_headers(group, settings)})
    if refusal.retry_after is not None:
        headers["Retry-After"] = str(refusal.retry_after)
    return list(headers.items()), json_bytes(response.body)


def _caller(environ: dict[str, Any]) -> Any:
    from sowctl.server.callers import caller_of_environ

    return caller_of_environ(environ)


def _app_method(app: Any, name: str) -> Any:
    """The application's method ``name`` seen through any wrapper, or None."""
    while app is not None and not callable(getattr(app, name, None)):
        app = getattr(app, "app", None)
    return None if app is None else getattr(app, name)


def _body_limit_of(app: Any) -> Callable[[str, str, str | None], int | Refusal] | None:
    """The application's own body limit per path (``SowctlBottle.body_limit``), seen through
    any wrapper; None for an application without one (the engine's default limit)."""
    while app is not None and not callable(getattr(app, "body_limit", None)):
        app = getattr(app, "app", None)
    if app is None:
        return None
    limit_of = app.body_limit

    def body_limit(method: str, path: str, authorization: str | None) -> int | Refusal:
        limit = limit_of(path, authorization)
        return Refusal(401, UNAUTHORIZED_UPLOAD) if limit is None else limit

    return body_limit
