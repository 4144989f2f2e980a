"""The worker processes of ``sowctl serve``: granian's, each running a Bridge around the application.

granian (Rust's hyper) parses every request and manages the workers: it forks them, hands
each the listening port (``SO_REUSEPORT``: the kernel spreads connections over them), and
starts again one that dies (after the first start: one that cannot start stops the server).
Its HTTP/1 settings carry the head deadline and size (``Limits.head_timeout``,
``head_buffer_bytes``) and its backpressure the connections a worker serves at once
(``Limits.max_connections``; the rest wait in the listen backlog). ``accept()`` failing at the
descriptor limit is load, not death: granian backs off and keeps serving.

No third-party module is imported until :func:`serve` runs.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from sowctl.engine import descriptors, logs
from sowctl.engine.hooks import Hooks
from sowctl.engine.isolation import end_with_parent, start_zygote
from sowctl.engine.limits import Limits

Loader = Callable[[], tuple[Any, Hooks]]
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_READY_POLL = 0.02
_SETTLE_POLL = 0.002  # a worker's look for its listening socket: soon after it listens
_SETTLE_WAIT = 10.0  # seconds the server waits for its workers' sockets to settle, at most


def serve(
    load: Loader,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    limits: Limits | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve what ``load`` returns (a WSGI application and its Hooks) until SIGINT or SIGTERM.

    ``load`` runs once in every worker, after the fork, so each opens its own database
    connections. ``on_ready(url)`` runs once, here, as soon as the port accepts connections;
    stdout is flushed after it. ``port=0`` picks a free port. Raises ``OSError`` when the
    address cannot be had and ``SystemExit`` when the workers cannot start.
    """
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server.mp import MPServer

    limits = limits or Limits()
    reservation, address = _reserve(host, port)
    # Each worker writes a byte here once its listening socket drops stalled connections;
    # the server is ready only then (a connection accepted before would keep no deadline).
    settled_read, settled_write = os.pipe()
    os.set_blocking(settled_write, False)
    url = _url(address)
    _raise_descriptor_limit(workers, limits)
    saved = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    server = MPServer(
        "sowctl",
        address=address[0],
        port=address[1],
        interface=Interfaces.ASGI,
        workers=workers,
        http=HTTPModes.http1,
        websockets=False,
        backlog=limits.backlog,
        backpressure=limits.max_connections,
        http1_settings=HTTP1Settings(
            header_read_timeout=max(1, round(limits.head_timeout * 1000)),
            keep_alive=True,
            max_buffer_size=limits.head_buffer_bytes,
        ),
        log_dictconfig=logs.config(),
        log_level=LogLevels.warning,
        workers_kill_timeout=max(1, round(limits.graceful_timeout)),
    )

    def started() -> None:
        sys.stdout.flush()  # nothing buffered is written again by each forked worker
        sys.stderr.flush()
        watcher = threading.Thread(
            target=_when_accepting,
            args=(server, address, url, on_ready, (settled_read, workers)),
            daemon=True,
        )
        watcher.start()

    server.on_startup(started)
    # What is loaded by now lives as long as the process: out of the collector's sight, the
    # collections while serving and the last one at exit need not walk it (that last one took
    # seconds of a stopping process on a crowded machine).
    gc.freeze()
    try:
        server.serve(target_loader=_worker_loader(load, limits, workers > 1, address[1], settled_write))
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    finally:
        _release(reservation, (settled_read, settled_write), saved)


def _raise_descriptor_limit(workers: int, limits: Limits) -> None:
    """Room for every connection and thread of every worker, or a word on stderr why not."""
    wanted = workers * (limits.max_connections + limits.threads + descriptors.SPARE)
    note = descriptors.raise_soft_limit(wanted)
    if note:
        sys.stderr.write(f"sowctl: {note}\n")


def _release(reservation: socket.socket, fds: tuple[int, ...], saved: dict[Any, Any]) -> None:
    """Give back the port reservation and the pipe, and put the signal handlers back."""
    reservation.close()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _worker_loader(
    load: Loader, limits: Limits, multiprocess: bool, port: int, settled: int
) -> Callable[[str], Any]:
    master = os.getpid()

    def loader(_target: str) -> Any:
        from sowctl.engine.bridge import Bridge

        _end_with(master)
        # Forked first, while this worker is one thread (granian's runtime starts after).
        zygote = None
        if limits.heavy_processes > 0:
            zygote = start_zygote(lambda: load()[0], limits.heavy_nice, limits.threads)
        _bound_stalled_writes(port, limits.send_timeout, settled)
        try:
            app, hooks = load()
        except BaseException as exc:
            _exit_worker(exc)
        if limits.switch_interval is not None:
            sys.setswitchinterval(limits.switch_interval)
        gc.freeze()  # the application's modules and tables, as in the master
        return Bridge(app, hooks, limits, multiprocess=multiprocess, zygote=zygote)

    return loader


def _end_with(master: int) -> None:
    """Have this worker stopped when the master dies, however it dies (SIGKILL included):
    a worker left behind would go on holding the port. Linux only (``PR_SET_PDEATHSIG``)."""
    if not end_with_parent():
        return
    if os.getppid() != master:  # the master died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _bound_stalled_writes(port: int, timeout: float, settled: int) -> None:
    """Have the kernel drop a connection whose answer the client stops taking for ``timeout``
    seconds (``TCP_USER_TIMEOUT`` on the worker's listening socket, which every accepted
    connection inherits). The engine stops sending to such a client, but the HTTP server
    keeps the connection until what it was handed is written, with no deadline of its own: a
    client that pipelined many requests and read nothing held its connection for good, and
    a thousand such held every connection of a worker. Linux only; the socket is made by the
    server in this process, so a thread waits for it to appear, then writes a byte to
    ``settled`` (so does a worker where the option does not exist)."""
    option = getattr(socket, "TCP_USER_TIMEOUT", None)
    if option is None or not os.path.isdir("/proc/self/fd"):
        _say_settled(settled)
        return

    def apply() -> None:
        give_up = time.monotonic() + 60
        while time.monotonic() < give_up:
            if _set_on_listener(port, option, max(1, round(timeout * 1000))):
                break
            time.sleep(_SETTLE_POLL)
        _say_settled(settled)

    threading.Thread(target=apply, name="sowctl-listener", daemon=True).start()


def _say_settled(settled: int) -> None:
    with contextlib.suppress(OSError):  # a full pipe (workers respawned many times) or a closed one
        os.write(settled, b".")


def _set_on_listener(port: int, option: int, value: int) -> bool:
    """Set TCP option ``option`` on this process's listening sockets on ``port``; whether any."""
    import stat

    found = False
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            with socket.socket(fileno=os.dup(fd)) as sock:
                listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                if listening and sock.type == socket.SOCK_STREAM and sock.getsockname()[1] == port:
                    sock.setsockopt(socket.IPPROTO_TCP, option, value)
                    found = True
        except (OSError, ValueError, IndexError):
            continue
    return found


def _when_accepting(
    server: Any,
    address: tuple[Any, ...],
    url: str,
    on_ready: Callable[[str], None] | None,
    settled: tuple[int, int],
) -> None:
    """Wait until every worker has settled its listening socket (or 10 s) and one accepts,
    then say so; from then on a worker that dies is replaced (one that cannot even start
    stops the server instead of failing forever)."""
    _wait_settled(*settled, deadline=time.monotonic() + _SETTLE_WAIT)
    target = _connectable(address)
    while True:
        try:
            socket.create_connection(target, timeout=1).close()
            break
        except OSError:
            time.sleep(_READY_POLL)
    server.respawn_failed_workers = True
    if on_ready is not None:
        on_ready(url)
    sys.stdout.flush()


def _wait_settled(fd: int, workers: int, deadline: float) -> None:
    import select

    seen = 0
    while seen < workers:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return
        try:
            seen += len(os.read(fd, workers - seen))
        except OSError:
            return


def _reserve(host: str, port: int) -> tuple[socket.socket, tuple[Any, ...]]:
    """Claim ``host:port`` (a free one for 0): a socket bound there that never listens, so
    another server cannot take the port while the workers bind it with ``SO_REUSEPORT``."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, addr = infos[0][0], infos[0][4]
    # Without SO_REUSEPORT first: that fails if anyone listens there (with it, we would
    # silently join another live server on the same port and split its traffic).
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(addr)
        addr = probe.getsockname()
    hold = socket.socket(family, socket.SOCK_STREAM)
    try:
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        hold.bind(addr)
    except BaseException:
        hold.close()
        raise
    return hold, addr


def _connectable(address: tuple[Any, ...]) -> tuple[str, int]:
    host = address[0]
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return host, address[1]


def _url(address: tuple[Any, ...]) -> str:
    host, port = address[0], address[1]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _exit_worker(exc: BaseException) -> None:
    """End a worker that could not start with one line (the traceback with SOWCTL_DEBUG=1),
    redacted: what failed may quote a token or a database URL."""
    from sowctl.foundation.redaction import redact_text

    if isinstance(exc, SystemExit | KeyboardInterrupt):
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 0
    else:
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
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
