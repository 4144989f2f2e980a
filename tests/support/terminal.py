"""``sowctl`` in a real pseudo-terminal of a given size, as a person at a terminal runs it."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time

DEADLINE = 30.0  # seconds for one command, start-up included, on a loaded machine
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_terminal(
    args: list[str], *, columns: int, rows: int = 500, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run ``sowctl ARGS`` with stdout, stdin and stderr on a pty of ``columns`` x ``rows``.

    Returns the exit code and what the terminal received, colour codes removed and
    line ends as ``\\n``.
    """
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = {**os.environ, "TERM": "xterm-256color", **(env or {})}
    # The size comes from the terminal alone, as for a person: COLUMNS/LINES (set by some
    # runners, copied into ``env`` by callers) would override it.
    for name in ("COLUMNS", "LINES"):
        environment.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "sowctl", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=environment,
        close_fds=True,
        start_new_session=True,
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    screen = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, _ANSI.sub("", screen)
