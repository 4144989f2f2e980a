"""Production WSGI runner for ``sowctl serve``: gunicorn, with sowctl's own worker.

Chosen by measurement, see ``bench/WSGI_SERVERS.md``: gunicorn's gthread worker, whose
event loop reads every request (limits, deadlines) before a thread runs it
(``sowctl.server.worker``).  Only stdlib is imported here; gunicorn is imported when
:func:`serve` runs.

Sockets.  The master binds and listens on the port itself before any worker
exists, so the real port is known for ``port=0``, ``on_ready`` can run in the
master, and early clients wait in the backlog instead of being refused.  Each
worker additionally gets its own ``SO_REUSEPORT`` socket from gunicorn
(``reuse_port``), so the kernel spreads connections, including long keep-alive
ones, over all workers; the master's socket is handed to every worker too, so
whatever lands on it is served by whichever worker is free.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any

from sowctl.server.access_log import WSGIApplication
from sowctl.server.settings import ServerSettings

BACKLOG = 2048
# Signals gunicorn's arbiter takes over; restored when serve() returns so that
# the caller is not left with handlers that only feed a dead arbiter's queue.
_ARBITER_SIGNALS = (signal.SIGHUP, signal.SIGQUIT, signal.SIGINT, signal.SIGTERM, signal.SIGTTIN)
_ARBITER_SIGNALS += (signal.SIGTTOU, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH, signal.SIGCHLD)


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
    """Serve the app built by ``app_factory`` until SIGINT or SIGTERM, then return.

    ``settings`` gives the limits and deadlines of requests (``ServerSettings``' defaults
    when None): pass the application's own, so both refuse the same bodies.

    ``app_factory`` runs once in every worker process, after the fork, so each
    worker opens its own database connections.  ``on_ready(url)`` runs once in
    this (master) process as soon as the port accepts connections; stdout is
    flushed afterwards.  ``port=0`` picks a free port.  Raises ``OSError`` if
    the port is taken and ``SystemExit`` with gunicorn's non-zero status if the
    workers cannot boot (e.g. ``app_factory`` raises).
    """
    master_pid = os.getpid()
    saved = {sig: signal.getsignal(sig) for sig in _ARBITER_SIGNALS}
    # Until gunicorn installs its handlers, make SIGTERM as quiet as Ctrl-C.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    listener: socket.socket | None = None
    try:
        listener = _listen(host, port)
        _run_gunicorn(
            app_factory,
            listener,
            workers=workers,
            threads=threads,
            on_ready=on_ready,
            access_log=access_log,
            settings=settings or ServerSettings(),
        )
    except BaseException as exc:
        if os.getpid() != master_pid:
            _exit_worker(exc)
        if isinstance(exc, KeyboardInterrupt) or (isinstance(exc, SystemExit) and exc.code in (0, None)):
            return
        raise
    finally:
        # Only the master gets here: workers leave through os._exit above.
        if listener is not None:
            listener.close()
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _run_gunicorn(
    app_factory: Callable[[], WSGIApplication],
    listener: socket.socket,
    *,
    workers: int,
    threads: int,
    on_ready: Callable[[str], None] | None,
    access_log: bool,
    settings: ServerSettings,
) -> None:
    from gunicorn.app.base import BaseApplication
    from gunicorn.errors import HaltServer
    from gunicorn.sock import TCP6Socket, TCPSocket

    from sowctl.server.access_log import AccessLog, log_refusal
    from sowctl.server.error_log import RedactingLogger
    from sowctl.server.worker import make_worker_class

    worker_class = make_worker_class(settings, log_refusal if access_log else lambda *args: None)

    address, port = listener.getsockname()[:2]
    v6 = listener.family == socket.AF_INET6
    hostport = f"[{address}]:{port}" if v6 else f"{address}:{port}"
    url = f"http://{hostport}"

    def when_ready(arbiter: Any) -> None:
        if on_ready is not None:
            on_ready(url)
        # Also keeps buffered output from being duplicated into the workers.
        sys.stdout.flush()
        sys.stderr.flush()

    def post_fork(arbiter: Any, worker: Any) -> None:
        # worker.sockets holds the worker's own SO_REUSEPORT socket; add the
        # master's one so connections queued on it are accepted as well.
        wrapper = TCP6Socket if v6 else TCPSocket
        worker.sockets.append(
            wrapper(listener.getsockname(), arbiter.cfg, arbiter.log, fd=os.dup(listener.fileno()))
        )
        listener.close()

    def load() -> WSGIApplication:
        app = app_factory()
        return AccessLog(app) if access_log else app

    options: dict[str, Any] = {
        "bind": [hostport],
        "workers": workers,
        "worker_class": worker_class,
        "threads": threads,
        "worker_connections": settings.max_connections,
        "reuse_port": True,
        "backlog": BACKLOG,
        "keepalive": max(1, round(settings.idle_timeout)),  # the worker applies idle_timeout itself
        # The worker's loop refuses request lines and heads over the limits (414, 431) before
        # gunicorn parses them; 0 lets every line within them through (gunicorn's own cap
        # would otherwise be 8190 bytes), so an over-long id or query value gets the
        # application's answer in the group's envelope.
        "limit_request_line": 0,
        "limit_request_field_size": settings.max_header_bytes,
        "graceful_timeout": 5,
        "loglevel": "warning",  # no "Booting worker ..." chatter; warnings and errors stay
        "accesslog": None,  # _AccessLog writes it, without headers
        "errorlog": "-",
        "logger_class": RedactingLogger,  # secrets a client sent never reach the error log
        # Recent gunicorn otherwise opens $HOME/.gunicorn/gunicorn.ctl (one per
        # user, so two servers clash) and runs a thread in the forking master.
        "control_socket_disable": True,
        "when_ready": when_ready,
        "post_fork": post_fork,
    }

    class Application(BaseApplication):
        # BaseApplication, unlike gunicorn's Application, reads neither
        # sys.argv, GUNICORN_CMD_ARGS nor a config file.
        def load_config(self) -> None:
            for key, value in options.items():
                if key in self.cfg.settings:  # older gunicorn lacks control_socket_disable
                    self.cfg.set(key, value)

        def load(self) -> WSGIApplication:
            return load()

    try:
        Application().run()
    except HaltServer as exc:
        # Normally turned into sys.exit() by the arbiter, but gunicorn 27 can
        # raise it again from its own shutdown when several workers fail to
        # boot; their tracebacks are already logged, so keep this one line.
        print(f"Error: {exc.reason}", file=sys.stderr, flush=True)
        raise SystemExit(exc.exit_status) from None


def _listen(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, addr = infos[0][0], infos[0][4]
    # SO_REUSEPORT would let us join another live server on the same port
    # (same user) and silently split its traffic, so claim the port without
    # it first: that fails if anyone listens there.
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(addr)
        addr = probe.getsockname()
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(addr)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _exit_worker(exc: BaseException) -> None:
    """End a forked worker without unwinding the caller's stack.

    The worker was forked deep inside serve(); letting SystemExit propagate
    would run the caller's ``finally`` blocks and context managers (temp dirs,
    database handles, ...) once more in every worker.
    """
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    elif isinstance(exc, KeyboardInterrupt):
        code = 0
    else:
        # One line, like every CLI error (the traceback with SOWCTL_DEBUG=1), and redacted:
        # what failed may quote a request or a token.
        from sowctl.redaction import redact_text

        if os.environ.get("SOWCTL_DEBUG"):
            text = "".join(traceback.format_exception(exc))
        else:
            first = (str(exc).strip().splitlines() or [""])[0]
            text = f"error: a server worker stopped: {type(exc).__name__}: {first}"
            text += " (set SOWCTL_DEBUG=1 for details)\n"
        with contextlib.suppress(Exception):
            sys.stderr.write(redact_text(text))
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # closed, broken, or busy in the frame the signal interrupted
            pass
    os._exit(code)
