"""The CLI runner every command test uses, and the fake production runner for ``sowctl serve``.

``cli`` (a fixture, registered in tests/conftest.py) runs ``sowctl ARGS`` in process against
the test's database; ``run_main`` is the same call without the fixture's database, for
tests that only read help or completion output. ``fake_runner`` replaces
``sowctl.server.runner`` so ``serve`` builds its app, calls on_ready and returns at once.

An exception the CLI would report as "unexpected error" (exit 5, the bug-report line) is
raised again by both, with its traceback, as ``click.testing.CliRunner(catch_exceptions=False)``
does: a test that meets one has found a bug, and exit 5 also means "the server or the database
failed", which would hide it. Tests of that report itself pass ``catch_exceptions=True``.
"""

from __future__ import annotations

import io
import json
import sys
import types
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_main(*args: str, input: str | None = None, catch_exceptions: bool = False) -> CliResult:
    """``sowctl ARGS`` in process (``sowctl.cli.main``); stdin is ``input`` when given. An
    unexpected exception propagates unless ``catch_exceptions`` (see the module's docstring)."""
    from sowctl.cli import main

    out, err = io.StringIO(), io.StringIO()
    stdin = sys.stdin
    if input is not None:
        sys.stdin = io.StringIO(input)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main([str(a) for a in args], catch_exceptions=catch_exceptions)
    finally:
        sys.stdin = stdin
    assert "Traceback" not in err.getvalue(), err.getvalue()
    if code == 0:
        from tests.support import json_output

        json_output.check([str(a) for a in args], out.getvalue())
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli(migrated_db_url: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run ``sowctl ARGS`` in process against this test's database; returns a CliResult. The
    database has the current schema (on SQLite a copy of an empty migrated file: the first
    command would otherwise create the schema, the most part of a typical CLI test's CPU)."""
    monkeypatch.setenv("SOWCTL_DB", migrated_db_url)

    def run(
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        catch_exceptions: bool = False,
    ) -> CliResult:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        return run_main(*args, input=input, catch_exceptions=catch_exceptions)

    return run


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Replace ``sowctl.server.runner`` so ``serve`` returns at once after on_ready; the dict
    records the runner's arguments and the built ``app``."""
    seen: dict = {}

    def serve(
        app_factory, *, host, port, workers=1, threads=4, on_ready=None, access_log=True, settings=None
    ):
        seen.update(host=host, port=port, workers=workers, threads=threads, access_log=access_log)
        seen["settings"] = settings
        seen["app"] = app_factory()
        if on_ready is not None:
            on_ready(f"http://{host}:{port or 54321}")

    module = types.ModuleType("sowctl.server.runner")
    module.serve = serve  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sowctl.server.runner", module)
    import sowctl.server

    monkeypatch.setattr(sowctl.server, "runner", module, raising=False)
    return seen


def mode_neutral(stderr: str) -> str:
    """``stderr`` without what only a server's answer has: a JSON error's ``status`` and
    ``requestId`` (local and remote mode print the rest alike)."""
    if not stderr.startswith("{"):
        return stderr
    error = json.loads(stderr)
    for key in ("status", "requestId"):
        error.pop(key, None)
    return json.dumps(error) + "\n"
