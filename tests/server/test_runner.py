"""sowctl.server.runner.serve on the engine: a subprocess, a free port, two workers, real signals."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # real servers in subprocesses: the full suite (.ci/run), not the quick loop

SCRIPT = """
import os, sys
import bottle
from sowctl.server.runner import serve

def factory():
    app = bottle.Bottle()
    pid = str(os.getpid())

    @app.get("/hello")
    def hello():
        bottle.response.set_header("X-Pid", pid)
        return {"status": "ok"}

    return app

# A plain print: serve() has to flush it, also when stdout is a pipe.
serve(factory, port=0, workers=2, threads=2, on_ready=print)
print("serve returned", file=sys.stderr)
"""


@contextlib.contextmanager
def _server(stdout_kind: str) -> Iterator[tuple[subprocess.Popen, int, IO[bytes]]]:
    """The script in a subprocess; yields it, the fd its stdout goes to, its stderr file."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    # stderr to a file: a chatty server can never block on a full pipe.
    with tempfile.TemporaryFile() as stderr, contextlib.ExitStack() as stack:
        if stdout_kind == "tty":
            stdout_fd, child_stdout = pty.openpty()
            stack.callback(os.close, stdout_fd)
        else:
            stdout_fd, child_stdout = os.pipe()
            stack.callback(os.close, stdout_fd)
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=child_stdout, stderr=stderr, env=env)
        os.close(child_stdout)
        try:
            yield proc, stdout_fd, stderr
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _read_url(fd: int, timeout: float = 30.0) -> str:
    data = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in data and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            data += chunk
    assert b"\n" in data, f"no URL on stdout: {data!r}"
    return data.split(b"\n")[0].decode().strip()


@pytest.mark.parametrize(
    ("sig", "stdout_kind"),
    [(signal.SIGTERM, "pipe"), (signal.SIGINT, "pipe"), (signal.SIGINT, "tty")],
    ids=["sigterm-pipe", "sigint-pipe", "sigint-tty"],
)
def test_serve_spreads_logs_and_stops_cleanly(sig: signal.Signals, stdout_kind: str) -> None:
    with _server(stdout_kind) as (proc, stdout_fd, stderr):
        url = _read_url(stdout_fd)
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1])

        # Right after on_ready: may wait in the backlog for a worker, must not be refused.
        with httpx.Client(base_url=url, timeout=30) as client:
            response = client.get(
                "/hello", params={"q": "1"}, headers={"Authorization": "Bearer s3cret", "x-api-key": "k3y"}
            )
        assert response.status_code == 200 and response.json() == {"status": "ok"}

        # Separate connections must reach both workers (reuse_port spreading).
        pids: set[str] = set()
        deadline = time.monotonic() + 5
        while len(pids) < 2 and time.monotonic() < deadline:
            with httpx.Client(base_url=url, timeout=30) as client:
                pids.add(client.get("/hello").headers["X-Pid"])
        assert len(pids) == 2, pids

        proc.send_signal(sig)
        assert proc.wait(timeout=10) == 0
        stderr.seek(0)
        log = stderr.read().decode()

    assert "Traceback" not in log, log
    assert "[server]" not in log, log  # the server's info chatter stays quiet
    assert '127.0.0.1 - "GET /hello?q=1 HTTP/1.1" 200 16 ' in log, log
    assert "s3cret" not in log and "k3y" not in log, log
    assert "serve returned" in log  # serve() returns normally instead of raising SystemExit

    # The port is free again and no worker outlived the master.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def test_access_log_escapes_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    from sowctl.server.access_log import AccessLog as _AccessLog

    def app(environ, start_response):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no", b"pe"]

    environ = {
        "REMOTE_ADDR": "10.0.0.1",
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": '/a b\n"x"/\xc3\xa9',  # latin-1 decoded, as PEP 3333 hands it over
        "QUERY_STRING": "token=abc",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_AUTHORIZATION": "Bearer s3cret",
    }
    body = _AccessLog(app)(environ, lambda status, headers, exc_info=None: None)
    assert b"".join(body) == b"nope"
    assert capsys.readouterr().err == ""  # logged once the server closes the body
    body.close()
    line = capsys.readouterr().err
    # a secret-named query parameter is masked (issue 8)
    assert line.startswith('10.0.0.1 - "GET /a%20b%0A%22x%22/%C3%A9?token=*** HTTP/1.1" 404 4 '), line
    assert line.endswith("ms\n") and line.count("\n") == 1 and "s3cret" not in line


@pytest.mark.parametrize(("error", "status"), [(ConnectionResetError, "-"), (RuntimeError, "500")])
def test_access_log_of_an_app_that_raises(
    capsys: pytest.CaptureFixture[str], error: type[Exception], status: str
) -> None:
    """A dropped connection (the "drop" fault, a client gone) sent no status; a crash is a 500."""
    from sowctl.server.access_log import AccessLog as _AccessLog

    def app(environ, start_response):
        raise error("gone")

    environ = {"REMOTE_ADDR": "10.0.0.1", "REQUEST_METHOD": "GET", "PATH_INFO": "/x"}
    environ["SERVER_PROTOCOL"] = "HTTP/1.1"
    with pytest.raises(error):
        _AccessLog(app)(environ, lambda status, headers, exc_info=None: None)
    line = capsys.readouterr().err
    assert line.startswith(f'10.0.0.1 - "GET /x HTTP/1.1" {status} 0 '), line


FAILING = """
from sowctl.server.runner import serve

def factory():
    raise RuntimeError("cannot open database for sowt_" + "A" * 40 + "\\nsecond line")

serve(factory, port=0, workers=2, threads=2, on_ready=print)
"""


def test_workers_that_cannot_start_stop_the_server_with_one_redacted_line_each() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SOWCTL_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-c", FAILING], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode != 0
    assert done.stdout == ""  # never "ready"
    expected = "error: a server worker stopped: RuntimeError: cannot open database for sowt_***"
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert lines and all(line == expected + " (set SOWCTL_DEBUG=1 for details)" for line in lines), (
        done.stderr
    )
    assert "Traceback" not in done.stderr and "AAAA" not in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) <= 8, done.stderr  # no respawn loop


def _children(pid: int) -> set[int]:
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def _eventually(condition, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_a_worker_that_dies_is_replaced_and_workers_end_with_their_master() -> None:
    with _server("pipe") as (proc, stdout_fd, _stderr):
        url = _read_url(stdout_fd)
        port = int(url.rsplit(":", 1)[1])
        workers = _children(proc.pid)
        assert len(workers) == 2
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        assert _eventually(lambda: len(_children(proc.pid)) == 2 and victim not in _children(proc.pid))
        with httpx.Client(base_url=url, timeout=30) as client:
            assert all(client.get("/hello").status_code == 200 for _ in range(10))

        survivors = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the master: no chance to stop its workers
        proc.wait(timeout=10)

        def gone() -> bool:
            for pid in survivors:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    continue
                if Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
                    return False
            return True

        assert _eventually(gone), "a worker outlived its master"
        assert _eventually(lambda: _refused(port))


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0
