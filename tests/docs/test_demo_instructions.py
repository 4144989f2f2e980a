"""``sowctl serve --demo`` prints what to paste into another shell, and it works there:
a shell whose virtual environment is not active (sowctl not on PATH)."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _start_demo(db: Path, argv0: list[str]) -> tuple[subprocess.Popen, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env.update(PYTHONUNBUFFERED="1", SOWCTL_CONFIG=str(db.parent / "server-config.toml"))
    process = subprocess.Popen(
        [*argv0, "--db", str(db), "serve", "--port", "0", "--quiet", "--demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line.rstrip("\n")) for line in process.stdout], daemon=True
    ).start()
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(line.strip().startswith("curl") for line in seen):
        try:
            seen.append(lines.get(timeout=0.2))
        except queue.Empty:
            if process.poll() is not None:
                break
    time.sleep(0.5)  # the second curl line
    while not lines.empty():
        seen.append(lines.get())
    return process, seen


@pytest.mark.parametrize("how", ["console script", "python -m sowctl"])
def test_the_demo_lines_work_in_another_shell_without_the_venv(tmp_path, how):
    venv_bin = Path(sys.executable).parent
    argv0 = [str(venv_bin / "sowctl")] if how == "console script" else [sys.executable, "-m", "sowctl"]
    process, lines = _start_demo(tmp_path / "demo.db", argv0)
    try:
        text = "\n".join(lines)
        assert "In another shell, paste:" in text, text
        pasted = [line.strip() for line in lines if line.startswith(("  unset ", "  export "))]
        tries = [line.strip() for line in lines[lines.index("Then try:") + 1 :] if "items list" in line
                 or "budgets views" in line]  # fmt: skip
        assert len(pasted) == 2 and len(tries) == 2, text
        assert all(re.match(r"^/\S+", line) for line in tries), "sowctl is named by its full path"
        home = tmp_path / "home"
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "SOWCTL_DB": "/nonexistent/db"}
        shell = subprocess.run(
            ["bash", "-e", "-c", "\n".join([*pasted, *tries])],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shell.returncode == 0, shell.stderr
        assert shell.stdout.strip(), "the demo commands printed the demo data"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
