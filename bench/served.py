"""A ``sowctl serve`` subprocess for the memory benchmarks, with its one worker's /proc figures."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


class Served:
    """``sowctl --db DB serve --port 0 --quiet [--threads N]``; ``url``, and ``worker`` (its pid)."""

    def __init__(self, db: Path, threads: int | None = None) -> None:
        command = [sys.executable, "-m", "sowctl", "--db", str(db), "serve", "--port", "0", "--quiet"]
        if threads is not None:
            command += ["--threads", str(threads)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("Listening on "):
                self.url = line.split()[-1]
                break
        deadline = time.monotonic() + 10
        while not self.children() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.worker = self.children()[0]

    def children(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()] if path.exists() else []

    def memory(self, field: str) -> int:
        """A /proc/PID/status field of the worker, in KiB."""
        for line in Path(f"/proc/{self.worker}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise KeyError(field)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)
