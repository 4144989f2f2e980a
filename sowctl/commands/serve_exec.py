"""``sowctl serve --exec CMD``, ``--load FILE`` and ``--export-on-exit FILE``: a server for one run.

``--exec`` forks: the child becomes the server (in a session of its own, so that
one signal stops it with its workers; on Linux it also dies with its parent),
the parent waits for "Listening on", runs CMD through the shell with the
server's address and credentials in its environment, then stops the server and
exits with CMD's exit code (128 + N when a signal N killed CMD, as shells say).
The server is stopped however CMD ends: success, failure, a signal, or a
Ctrl-C that reached CMD (the parent ignores SIGINT meanwhile; SIGTERM sent to
the parent is passed on to CMD).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sowctl.foundation.errors import ExitCode, InvalidInput, SowctlError, UsageError, quoted
from sowctl.output.terminal import current

if TYPE_CHECKING:
    from sowctl.services.dataset.source import DatasetSource

STARTUP_TIMEOUT = 60.0  # seconds for the server to say "Listening on"
STOP_TIMEOUT = 20.0  # the server's graceful stop takes up to 10 s; then SIGKILL

# Environment variables CMD gets (names fixed: the CLI and the plugin read the same ones).
ENV_SERVER = "SOWCTL_SERVER"
ENV_TOKEN = "SOWCTL_TOKEN"
ENV_API_KEY = "SOWCTL_API_KEY"
ENV_ORG = "SOWCTL_ORG"
ENV_COMPANY = "SOWCTL_COMPANY"
ENV_ADMIN_TOKEN = "SOWCTL_ADMIN_TOKEN"


# --- --load and --export-on-exit ------------------------------------------------------------


def open_load(path: Path) -> DatasetSource:
    """The dataset ``--load`` names, its shape checked: before any database is opened, so
    that a missing or broken file leaves nothing behind."""
    from sowctl.services.dataset.source import open_dataset

    try:
        return open_dataset(path)  # streamed, as `sowctl import` reads it
    except UsageError as exc:  # "cannot read FILE": say which option named it
        raise UsageError(f"--load: {exc.message}") from None
    except InvalidInput as exc:
        raise InvalidInput(f"--load: {exc.message}", exc.issues) from None


def load_file(path: Path, source: DatasetSource | None = None) -> dict[str, int]:
    """Replace the database's records with the dataset in ``path`` (``source``: already
    opened by ``open_load``): all of it, or nothing."""
    from sowctl.services.dataset.replace import replace_dataset

    if source is None:
        source = open_load(path)
    try:
        return replace_dataset(source)
    except InvalidInput as exc:
        raise InvalidInput(f"--load {path}: {exc.message}", exc.issues) from None


def check_export_target(path: Path) -> None:
    """Refuse at start-up what could not be written at the end (a missing directory...)."""
    parent = path.expanduser().resolve().parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UsageError(f"--export-on-exit: cannot write {path}: the directory is missing or read-only")


def export_file(database: str, path: Path) -> None:
    """Write the whole database to ``path`` as a dataset (atomically), once the server stopped."""
    from sowctl.commands.dataset import _write_atomically
    from sowctl.services.dataset import export_dataset
    from sowctl.storage.database import close_database, open_database

    open_database(database)
    try:
        data = export_dataset()
    finally:
        close_database()
    records = sum(len(rows) for rows in data.values())
    _write_atomically(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    current().err.write(f"exported {records:,} records to {path}\n")
    current().err.flush()


# --- credentials for CMD --------------------------------------------------------------------


def credentials(demo: tuple[str, str, bool] | None) -> dict[str, str]:
    """SOWCTL_TOKEN/API_KEY/ORG/COMPANY for CMD: the demo's, or new ones for the first organization.

    The token is an admin's (CMD tests the whole API) of the organization's first
    user; the company is the organization's first. An empty database gives none.
    """
    from sowctl.services import credentials as issue
    from sowctl.storage import models as m

    if demo is not None:
        from sowctl.services.demo_data import DEMO_COMPANY, DEMO_ORG

        token, key, _ = demo
        return {ENV_TOKEN: token, ENV_API_KEY: key, ENV_ORG: DEMO_ORG, ENV_COMPANY: DEMO_COMPANY}
    organization = m.Organization.select().order_by(m.Organization.id).first()
    if organization is None:
        return {}
    user = m.User.select().where(m.User.organization == organization.id).order_by(m.User.id).first()
    user_id = user.id if user is not None else "sowctl-exec"
    found: dict[str, str] = {
        ENV_TOKEN: issue.create_token(user_id, organization.id, "admin").secret,
        ENV_API_KEY: issue.create_key(organization.id).secret,
        ENV_ORG: organization.id,
    }
    company = (
        m.Company.select().where(m.Company.organization == organization.id).order_by(m.Company.id).first()
    )
    if company is not None:
        found[ENV_COMPANY] = company.id
    return found


# --- the run ----------------------------------------------------------------------------------


def serve_and_exec(
    command: str,
    run_server: Callable[[Callable[[str], None]], None],
    env: dict[str, str],
) -> int:
    """Fork the server (``run_server(on_ready)``), run ``command``, stop the server; CMD's exit code."""
    if not command.strip():
        raise UsageError("--exec needs a command")
    read_end, write_end = os.pipe()
    current().out.flush()
    current().err.flush()
    pid = os.fork()
    if pid == 0:  # the server
        os.close(read_end)
        _become_server(write_end, run_server)
    os.close(write_end)
    url = _wait_for_url(read_end, pid)
    if url is None:
        _stop(pid)
        raise SowctlError("the server did not start (see the messages above)")
    try:
        return _run(command, {**_clean_environment(), ENV_SERVER: url, **env})
    finally:
        _stop(pid)


def _become_server(ready_fd: int, run_server: Callable[[Callable[[str], None]], None]) -> None:
    code = 0
    try:
        os.setsid()  # one process group: the parent stops master and workers with one signal
        _die_with_parent()

        def ready(url: str) -> None:
            os.write(ready_fd, (url + "\n").encode())
            os.close(ready_fd)

        run_server(ready)
    except SowctlError as exc:
        current().err.write(f"error: {exc.message}\n")
        code = int(exc.exit_code)
    except BaseException as exc:  # no traceback for the user; the parent reports the failure
        if not isinstance(exc, KeyboardInterrupt | SystemExit):
            current().err.write(f"error: the server stopped: {type(exc).__name__}: {exc}\n")
            code = int(ExitCode.FAILURE)
    finally:
        with contextlib.suppress(Exception):
            current().out.flush()
            current().err.flush()
        os._exit(code)


def _die_with_parent() -> None:
    """Linux: SIGTERM to the server when the parent dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _wait_for_url(fd: int, pid: int) -> str | None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    data = b""
    try:
        while b"\n" not in data and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    return None
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            data += chunk
    finally:
        os.close(fd)
    return data.split(b"\n", 1)[0].decode() if b"\n" in data else None


def _clean_environment() -> dict[str, str]:
    from sowctl.server.metrics import environment_without_ours

    # SOWCTL_DB would make a sowctl command in CMD use the database instead of the server;
    # the server's metrics directory is its workers' alone.
    return environment_without_ours({k: v for k, v in os.environ.items() if k != "SOWCTL_DB"})


def _run(command: str, env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(command, shell=True, env=env)
    except OSError as exc:
        raise UsageError(f"--exec: cannot run {quoted(command)}: {exc.strerror or exc}") from None

    def forward(signum: int, frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    # Ctrl-C reaches CMD (the same terminal process group); the server is stopped after it.
    saved = {sig: signal.signal(sig, handler) for sig, handler in ((signal.SIGINT, signal.SIG_IGN),)}
    saved[signal.SIGTERM] = signal.signal(signal.SIGTERM, forward)
    try:
        code = child.wait()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def _stop(pid: int) -> None:
    """SIGTERM to the server (a graceful stop), SIGKILL to its whole group if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            break
        time.sleep(0.05)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
