"""Shared fixtures: an isolated database and config per test, and an in-process CLI runner.

The backend under test is chosen by SOWCTL_TEST_DB: unset or "sqlite" gives a fresh
SQLite file per test; a postgresql:// URL runs the suite on PostgreSQL (see
``tests/pg.py``).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from sowctl import clock
from sowctl.db import open_database
from sowctl.services.access import Caller

# Property tests replay the same examples on every run, so a CI run cannot fail by
# chance; SOWCTL_TEST_HYPOTHESIS=explore draws new ones (a bug hunt, not a gate). Neither
# judges by the clock (per-example deadline, "generation is slow"): on a loaded CI
# machine those fail by chance too; the properties themselves are what is asserted.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
hypothesis_settings.register_profile("replay", derandomize=True, database=None, **_UNTIMED)
hypothesis_settings.register_profile("explore", derandomize=False, database=None, **_UNTIMED)
hypothesis_settings.load_profile(os.environ.get("SOWCTL_TEST_HYPOTHESIS", "replay"))


@pytest.fixture(autouse=True)
def isolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's config, colours or terminal width."""
    for name in list(os.environ):
        # SOWCTL_TEST_* and SOWCTL_FUZZ_* steer the suite itself, not sowctl.
        if name.startswith("SOWCTL_") and not name.startswith(("SOWCTL_TEST_", "SOWCTL_FUZZ_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SOWCTL_CONFIG", str(tmp_path / "config" / "config.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    yield
    clock.set_fixed_now(None)
    clock.seed(None)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh, empty database for this test (SQLite file, or a PostgreSQL database)."""
    target = os.environ.get("SOWCTL_TEST_DB", "sqlite")
    if target.startswith("postgres"):
        from tests import pg

        return pg.fresh_database(target)
    return str(tmp_path / "test.db")


@pytest.fixture
def db(db_url: str):
    """The opened database (models bound), for tests that call the core directly."""
    database = open_database(db_url)
    yield database
    database.close()


@pytest.fixture
def local() -> Caller:
    return Caller.local()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        import json

        return json.loads(self.stdout)


@pytest.fixture
def cli(db_url: str, monkeypatch: pytest.MonkeyPatch):
    """Run ``sowctl ARGS`` in process against this test's database; returns a CliResult."""
    monkeypatch.setenv("SOWCTL_DB", db_url)

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
        from sowctl.cli import main

        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        out, err = io.StringIO(), io.StringIO()
        stdin = sys.stdin
        if input is not None:
            sys.stdin = io.StringIO(input)
        try:
            with redirect_stdout(out), redirect_stderr(err):
                code = main([str(a) for a in args])
        finally:
            sys.stdin = stdin
        assert "Traceback" not in err.getvalue(), err.getvalue()
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture(autouse=True)
def wire_guard() -> Iterator[None]:
    """Every response of the service's routes must match the service's own description
    (tests/service_spec.py): statuses, shapes, types, no extra fields, no stray null."""
    from tests import wire_guard

    wire_guard.install()
    wire_guard.FINDINGS.take()  # nothing carried over from a previous test
    yield
    found = wire_guard.FINDINGS.take()
    if found:
        pytest.fail("responses that differ from the service's description:\n" + "\n".join(found[:20]))


# `modes`: one command in local and in remote mode on the same database (tests/support/modes.py).
from tests.support.modes import modes  # noqa: E402, F401
