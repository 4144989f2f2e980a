"""Descriptor exhaustion is load, not death: a worker at its open-file limit keeps serving.

Before, ``accept()`` failing with EMFILE ended the worker (exit code 255): with ``ulimit -n
256``, 400 idle sockets killed 19 workers in 15 s and every other request failed.
"""

from __future__ import annotations

import contextlib
import resource
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import Server

pytestmark = pytest.mark.slow  # real servers: the full suite only


def _limit_descriptors(count: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return limit


def test_idle_sockets_past_the_descriptor_limit_do_not_kill_the_server(tmp_path: Path) -> None:
    server = Server(tmp_path / "fd.db", "--workers", "2", preexec_fn=_limit_descriptors(256))
    idle: list[socket.socket] = []
    try:
        assert any("open-file limit is 256" in line for line in server.stderr_lines), server.stderr_lines
        workers = _worker_pids(server)
        host, port = httpx.URL(server.url).host, httpx.URL(server.url).port
        for _ in range(600):
            with contextlib.suppress(OSError):
                idle.append(socket.create_connection((host, port), timeout=2))
        time.sleep(1)  # every worker met its limit meanwhile
        # Served once idle connections are closed (5 s without a request), not refused for good.
        with httpx.Client(timeout=20) as client:
            assert client.get(server.url + "/healthz").status_code == 200
        for sock in idle:
            sock.close()
        idle.clear()
        with httpx.Client(timeout=10) as client:
            assert all(client.get(server.url + "/healthz").status_code == 200 for _ in range(20))
        assert server.process.poll() is None
        assert _worker_pids(server) == workers  # none died and was replaced
    finally:
        for sock in idle:
            sock.close()
        server.stop(signal.SIGTERM)
    assert not any("Traceback" in line for line in server.stderr_lines), server.stderr_lines


def _worker_pids(server: Server) -> set[int]:
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
    return {int(pid) for pid in children}


RAISE = """
import resource
from sowctl.engine.descriptors import raise_soft_limit
print(raise_soft_limit(needed=3000))
print(resource.getrlimit(resource.RLIMIT_NOFILE))
print(raise_soft_limit(needed=5000))
"""


def test_serve_raises_its_soft_limit_to_the_hard_one_and_says_when_that_is_too_few() -> None:
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 4096))

    done = subprocess.run(
        [sys.executable, "-c", RAISE],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=30,
        check=True,
    )
    first, limits, second = done.stdout.splitlines()
    assert first == "None" and limits == "(4096, 4096)"
    assert second.startswith("the open-file limit is 4096, below the 5000")
