"""``SowctlServer``: ``sowctl serve`` in a subprocess on a free port, with the admin API on.

Started with the interpreter that runs the tests (``python -m sowctl``), in a
session of its own, with a generated admin token (``--admin``); ready once it
prints "Listening on". ``stop()`` sends SIGTERM to that PID (the master stops
its workers) and SIGKILL to its process group if it has not stopped in time.
The server's stderr goes to ``log_path`` (shown when it fails to start).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class ServerError(Exception):
    """The server did not start."""


class SowctlServer:
    def __init__(self, database: str, log_path: Path, *extra_args: str) -> None:
        self.database = database
        self.log_path = log_path
        self.url = ""
        self.admin_token = ""
        # No SOWCTL_* of the developer's shell: the server uses exactly what is given here.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
        env["PYTHONUNBUFFERED"] = "1"
        command = [sys.executable, "-m", "sowctl", "--db", database, "serve", "--port", "0"]
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*command, "--quiet", "--admin", *extra_args],
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                text=True,
                env=env,
                start_new_session=True,
            )
        self.pid = self.process.pid
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self) -> None:
        found: dict[str, str] = {}
        done = threading.Event()
        assert self.process.stdout is not None
        stdout = self.process.stdout

        def read() -> None:
            for line in stdout:  # read to the end, so the server never blocks on a full pipe
                if line.startswith("Admin token: "):
                    found["token"] = line.removeprefix("Admin token: ").strip()
                elif line.startswith("Listening on ") and "url" not in found:
                    found["url"] = line.removeprefix("Listening on ").strip()
                    done.set()
            done.set()

        threading.Thread(target=read, daemon=True, name="sowctl-serve-stdout").start()
        done.wait(STARTUP_TIMEOUT)
        if "url" not in found or "token" not in found:
            log = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
            raise ServerError(f"sowctl serve did not start on {self.database}:\n{log}")
        self.url, self.admin_token = found["url"], found["token"]

    def stop(self) -> int | None:
        """Stop the server started here (by its PID); its exit status."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)  # its own session: master and workers only
            self.process.wait(timeout=STOP_TIMEOUT)
        return self.process.returncode
