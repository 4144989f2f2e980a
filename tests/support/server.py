"""``sowctl serve`` in a subprocess on a free port: the one helper every real-server test uses."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from sowctl.services import demo_data

STARTUP_TIMEOUT = 30.0


class Server:
    """``sowctl --db DB serve --port 0 ARGS`` in its own process group.

    ``quiet`` adds ``--quiet`` (no access log); ``env`` adds environment variables (the
    caller's own ``SOWCTL_*`` ones are not passed on). Output is collected by threads:
    ``stdout_lines``, ``stderr_lines``; ``admin_token`` is read from ``--admin``'s
    line; ``client`` is an httpx client on ``url``.
    """

    def __init__(
        self,
        db: str | Path,
        *args: str,
        quiet: bool = True,
        env: dict[str, str] | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
        env = {**inherited, **(env or {})}
        env["PYTHONUNBUFFERED"] = "1"
        command = [sys.executable, "-m", "sowctl", "--db", str(db), "serve", "--port", "0"]
        self.process = subprocess.Popen(
            [*command, *(["--quiet"] if quiet else []), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
        self.stdout: queue.Queue[str | None] = queue.Queue()
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._collect_stderr, daemon=True).start()
        self.admin_token: str | None = None
        self.url = self._wait_for_url()
        self.client = httpx.Client(base_url=self.url, timeout=30)

    # Names some tests use for the same lists.
    @property
    def lines(self) -> list[str]:
        return self.stdout_lines

    @property
    def stderr(self) -> list[str]:
        return self.stderr_lines

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.stdout.put(line.rstrip("\n"))
        self.stdout.put(None)

    def _collect_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))

    def _next_line(self, deadline: float) -> str | None:
        while time.monotonic() < deadline:
            try:
                return self.stdout.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while (line := self._next_line(deadline)) is not None:
            self.stdout_lines.append(line)
            if line.startswith("Admin token: "):
                self.admin_token = line.removeprefix("Admin token: ").strip()
            if line.startswith("Listening on "):
                return line.removeprefix("Listening on ").strip()
        self.kill()
        raise AssertionError(f"server did not start: {self.stdout_lines} {self.stderr_lines}")

    def read_stdout_until(self, marker: str, timeout: float = 30.0) -> list[str]:
        """Every stdout line so far, reading on until one contains ``marker``."""
        deadline = time.monotonic() + timeout
        while not any(marker in line for line in self.stdout_lines):
            line = self._next_line(deadline)
            if line is None:
                break
            self.stdout_lines.append(line)
        return self.stdout_lines

    def wait_for_stderr(self, text: str, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.stderr_lines):
                return True
            time.sleep(0.05)
        return False

    def kill(self) -> None:
        """SIGKILL to the whole process group: master and workers die mid-flight."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Send ``sig`` (SIGTERM: a clean shutdown) and return the exit status; a server
        that does not stop within ``timeout`` is killed and the timeout raised."""
        if hasattr(self, "client"):
            self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise


def seed_demo(db_url: str) -> tuple[str, str]:
    """The demo dataset, a member token and an API key of org-acme; the connection closed."""
    import datetime

    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset
    from sowctl.storage.database import open_database

    database = open_database(db_url)
    try:
        import_dataset(demo_data.demo_dataset(datetime.date.today()))
        token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
        key = credentials.create_key(demo_data.DEMO_ORG).secret
    finally:
        database.close()
    return token, key


def demo_secrets(stdout: str) -> tuple[str, str]:
    """The member token and API key ``serve --demo`` printed."""
    token = re.search(r"^  token:\s+(\S+)$", stdout, re.M)
    key = re.search(r"^  API key:\s+(\S+)$", stdout, re.M)
    assert token and key, stdout
    return token.group(1), key.group(1)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start real servers (``serve(db, *args)``); all of them are stopped after the test."""
    servers: list[Server] = []

    def start(db: Path | None = None, *args: str) -> Server:
        server = Server(db or tmp_path / "served.db", *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
