"""Processes of their own for a worker's heavy requests, so that their native calls (a large
body's ``json.loads``, its validation, a long report's serialization) hold another
interpreter's lock than the one ordinary requests need.

A worker forks a *zygote* first thing, while it is still one thread (before granian starts
its runtime and before the application is loaded). The zygote closes every descriptor it
inherited but the standard streams and its control socket (a listening socket kept open in
a process that never accepts would swallow the connections the kernel hands it), and then
only forks: for each socket the worker sends it (``SCM_RIGHTS``), one *helper* process that
loads the application itself (its own database connections) and runs the calls handed over
that socket in threads of its own (as many as a worker has; the worker's turns let one run
at a time, and the report and write slots are the application's, as in a worker). A helper
that dies is replaced by asking the zygote again, with a new socket, so the worker sees a
helper's death as the end of its socket.

Each message is ``(request id, message)``, pickled (both ends are this program); per request
the exchange is in lockstep, one message each way:

* ``("start", environ, body, head_only)``: run the application; the reply is
  ``("answer", status, headers, pieces, done, seconds)``, ``("dropped", seconds)`` or
  ``("failed", text, seconds)``;
* ``("next",)``: the next pieces of a streamed answer: ``("pieces", ok, pieces or text, done,
  seconds)``;
* ``("close", cut_short)``: close the answer (PEP 3333's ``close()``; ``cut_short`` is what
  the worker put under ``CUT_SHORT_KEY``): ``("closed",)``.

``seconds`` is the helper's thread time for the call, charged to the caller as a thread's is.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from sowctl.engine.hooks import CUT_SHORT_KEY
from sowctl.engine.running import Answer, Dropped, WSGIApp, advance, close, start, timed

AppLoader = Callable[[], WSGIApp]
_PR_SET_PDEATHSIG = 1
_IN_HELPER = False
# Environ values a helper cannot be sent; it makes its own.
_LOCAL_KEYS = frozenset({"wsgi.input", "wsgi.errors"})


class HelperGone(Exception):
    """The helper process ended."""


class HelperUnavailable(HelperGone):
    """No helper process can be had: the zygote is gone, or the application does not load."""


def in_helper() -> bool:
    """Whether this process is a helper (an application may leave out what only a worker needs)."""
    return _IN_HELPER


class Zygote:
    """The worker's end of its zygote: ask it for a helper."""

    def __init__(self, pid: int, control: socket.socket) -> None:
        self.pid = pid
        self.control = control

    def helper(self) -> Connection:
        """A new helper's connection (its ``("ready",)`` not yet read); ``HelperGone`` when the
        zygote is gone."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket.send_fds(self.control, [b"h"], [theirs.fileno()])
        except OSError as exc:
            ours.close()
            raise HelperUnavailable(f"no helper process: {exc}") from None
        finally:
            theirs.close()
        return Connection(ours.detach())

    def stop(self) -> None:
        """Close the control socket (the zygote ends as it reads that), without waiting."""
        with contextlib.suppress(OSError):
            self.control.close()


def start_zygote(load_app: AppLoader, nice: int = 0, threads: int = 4) -> Zygote:
    """Fork the zygote (call while this process is a single thread); its helpers run ``nice``
    steps below this process's priority, so that the system gives the worker's ordinary
    requests the processor first when both want it."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    sys.stdout.flush()
    sys.stderr.flush()
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        ours.close()
        _run_zygote(theirs, load_app, nice, threads, worker)
    theirs.close()
    return Zygote(pid, ours)


def _run_zygote(control: socket.socket, load_app: AppLoader, nice: int, threads: int, worker: int) -> None:
    code = 0
    zygote = os.getpid()
    try:
        _keep_only(control.fileno())
        if nice:
            with contextlib.suppress(OSError):
                os.nice(nice)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C: the worker ends us
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # helpers are reaped as they end
        # The HTTP server's handlers came with the fork: under them the SIGTERM of a dead
        # parent only set the server's stop flag, and the zygote and its helpers lived on.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        end_with_parent(worker)
        while True:
            message, fds, _, _ = socket.recv_fds(control, 16, 1)
            if not message:
                break  # the worker is gone
            if not fds:
                continue
            if os.fork() == 0:
                control.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                end_with_parent(zygote)
                _run_helper(fds[0], load_app, threads)
            os.close(fds[0])
    except BaseException:
        code = 1
    os._exit(code)


def _keep_only(control: int) -> None:
    """Close every inherited descriptor but the standard streams and ``control``."""
    top = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536
    os.closerange(3, control)
    os.closerange(control + 1, max(control + 2, int(top)))


def end_with_parent(parent: int | None = None) -> bool:
    """Have this process sent SIGTERM when its parent dies, however it dies (Linux only:
    ``PR_SET_PDEATHSIG``); whether that was set. ``parent``: the pid that forked this
    process; if it died before the request took effect, the SIGTERM is sent now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def _run_helper(fd: int, load_app: AppLoader, threads: int) -> None:  # pragma: no cover - child
    global _IN_HELPER
    _IN_HELPER = True
    connection = Connection(fd)
    try:
        app = load_app()
    except BaseException as exc:
        with contextlib.suppress(Exception):
            connection.send(("unavailable", f"{type(exc).__name__}: {exc}"))
        os._exit(1)
    connection.send(("ready",))
    serve_requests(connection, app, threads)
    os._exit(0)


def serve_requests(connection: Connection, app: WSGIApp, threads: int) -> None:
    """Answer the worker's messages, each ``(request id, message)``, in up to ``threads``
    threads, until its socket ends."""
    sending = threading.Lock()
    answers: dict[int, list[Any]] = {}  # request id: [the answer under way, its environ]

    def work(request: int, message: tuple[Any, ...]) -> None:
        current = answers.setdefault(request, [None, None])
        reply = _reply(app, message, current)
        if current[0] is None or current[0].done:
            answers.pop(request, None)
        with sending:
            connection.send((request, reply))

    with ThreadPoolExecutor(threads, thread_name_prefix="sowctl-heavy") as pool:
        while True:
            try:
                request, message = connection.recv()
            except (EOFError, OSError):
                return
            pool.submit(work, request, message)


def _reply(app: WSGIApp, message: tuple[Any, ...], current: list[Any]) -> tuple[Any, ...]:
    kind = message[0]
    if kind == "start":
        _, environ, body, head_only = message
        environ.update({"wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr})
        ok, result, seconds = timed(partial(start, app, environ, head_only))
        if not ok:
            if isinstance(result, Dropped):
                return ("dropped", seconds)
            return ("failed", f"{type(result).__name__}: {result}", seconds)
        current[:] = [result, environ]
        return ("answer", result.status, result.headers, result.pieces, result.done, seconds)
    answer: Answer | None = current[0]
    if kind == "next" and answer is not None:
        ok, result, seconds = timed(partial(advance, answer))
        if not ok:
            return ("pieces", False, f"{type(result).__name__}: {result}", True, seconds)
        return ("pieces", True, answer.pieces, answer.done, seconds)
    if kind == "close" and answer is not None:
        if message[1]:
            current[1][CUT_SHORT_KEY] = message[1]
        if not answer.done:
            answer.done = True
            ok, result, _ = timed(partial(close, answer.body))
            if not ok:
                sys.stderr.write(f"[sowctl] closing an answer failed: {type(result).__name__}: {result}\n")
        current[:] = [None, None]
        return ("closed",)
    return ("failed", f"unexpected message {kind!r}", 0.0)


def sendable(environ: dict[str, Any]) -> dict[str, Any]:
    """What of ``environ`` a helper is sent (it makes the input and error streams itself)."""
    return {key: value for key, value in environ.items() if key not in _LOCAL_KEYS}
