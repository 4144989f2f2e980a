"""The terminal a command's output goes to, and the state of the run that writes to it.

One ``Terminal`` per run of ``sowctl.cli.main``: the streams (stdout, stderr), whether stdout
is a terminal and how wide it is, the output options of the command being run (``--jq``,
``--columns``), whether failures are printed as JSON, and the exit code the command has
already decided on. A program embedding the CLI (the tests) hands ``main`` a ``Terminal`` with
its own streams, or says it is a terminal of a given width, instead of patching ``sys``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from typing import Any, TextIO


@dataclass(frozen=True)
class Shape:
    jq: str | None = None  # --jq EXPR
    columns: list[str] | None = None  # --columns, parsed


@dataclass
class Terminal:
    # None: sys.stdout (sys.stderr) when written to, so that redirecting them still works
    stdout: TextIO | None = None
    stderr: TextIO | None = None
    tty: bool | None = None  # None: whether stdout is a terminal
    columns: int | None = None  # None: the terminal's width (COLUMNS, else asked)
    json_errors: bool = False  # failures as one JSON object (--json, SOWCTL_ERRORS=json)
    shape: Shape = field(default_factory=Shape)
    # The exit code the command settled before it printed (a failed check is 1 whatever the
    # reader does); ``sowctl.cli`` returns it when stdout's reader leaves early.
    decided_exit: int | None = None
    rich: Any = field(default=None, repr=False, compare=False)  # its Rich console, once made

    @property
    def out(self) -> TextIO:
        return self.stdout if self.stdout is not None else sys.stdout

    @property
    def err(self) -> TextIO:
        return self.stderr if self.stderr is not None else sys.stderr

    def is_tty(self) -> bool:
        return self.tty if self.tty is not None else self.out.isatty()

    def width(self) -> int:
        return self.columns if self.columns is not None else shutil.get_terminal_size().columns

    def decide_exit(self, code: int) -> None:
        """Record the command's exit code before its output is written (see ``decided_exit``)."""
        self.decided_exit = code


_active = Terminal()


def current() -> Terminal:
    """The terminal of the run in progress (a default one outside ``sowctl.cli.main``)."""
    return _active


@contextmanager
def running(terminal: Terminal) -> Iterator[Terminal]:
    """Make ``terminal`` the current one for the time of a run. Streams it was given stand in
    for ``sys.stdout`` and ``sys.stderr`` too, for what click and Typer print (help, prompts)."""
    global _active
    previous, _active = _active, terminal
    try:
        with ExitStack() as streams:
            if terminal.stdout is not None:
                streams.enter_context(redirect_stdout(terminal.stdout))
            if terminal.stderr is not None:
                streams.enter_context(redirect_stderr(terminal.stderr))
            yield terminal
    finally:
        _active = previous
