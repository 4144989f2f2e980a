"""Long output on a terminal goes through a pager, as ``gh`` and ``git`` do.

The pager is ``SOWCTL_PAGER``, else ``PAGER``, else ``less`` when it is installed;
an empty value or ``cat`` means none. It runs only when stdout is a terminal, the
command shows data (never one that may ask a question), ``--no-pager`` is absent,
and the output is taller than the terminal. ``less`` gets ``LESS=FRX`` unless LESS
is set: colours pass through, and the screen is not cleared on exit.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def pager_command() -> str | None:
    for name in ("SOWCTL_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            value = value.strip()
            return None if value in ("", "cat") else value
    import shutil

    return "less" if shutil.which("less") else None


class _Screen(io.StringIO):
    """Holds what a command prints for the terminal, and still says it is one."""

    def __init__(self, real: Any) -> None:
        super().__init__()
        self.real = real

    def isatty(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.real, "encoding", None) or "utf-8"


@contextmanager
def paged(enabled: bool) -> Iterator[None]:
    """Run the body with stdout held, then page it if it is taller than the terminal."""
    command = pager_command() if enabled and sys.stdout.isatty() else None
    if command is None:
        yield
        return
    real = sys.stdout
    screen = _Screen(real)
    sys.stdout = screen
    try:
        yield
    finally:
        sys.stdout = real
        show(screen.getvalue(), command, real)


def show(text: str, command: str, out: Any) -> None:
    import shutil

    if text.count("\n") < shutil.get_terminal_size().lines:
        out.write(text)
        out.flush()
        return
    import subprocess

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    out.flush()
    try:
        process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        out.write(text)
        return
    stdin = process.stdin
    assert stdin is not None  # opened with stdin=PIPE
    try:
        stdin.write(text.encode(getattr(out, "encoding", None) or "utf-8", "replace"))
        stdin.close()
    except BrokenPipeError:  # the reader quit the pager before the end
        pass
    while True:
        try:
            code = process.wait()
            break
        except KeyboardInterrupt:  # Ctrl-C belongs to the pager while it runs
            continue
    if code == 127:  # the shell could not find the pager: show the text rather than lose it
        sys.stderr.write(f"warning: pager {command!r} not found; set SOWCTL_PAGER (or '' for none)\n")
        out.write(text)
