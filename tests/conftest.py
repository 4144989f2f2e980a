"""Shared fixtures: an isolated database and config per test; the CLI runner, the fake server
runner, real servers and the two-modes helper come from tests/support/.

The backend under test is chosen by SOWCTL_TEST_DB: unset or "sqlite" gives a fresh
SQLite file per test; a postgresql:// URL runs the suite on PostgreSQL (see
``tests/support/pg.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
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
        from tests.support import pg

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


@pytest.fixture(autouse=True)
def wire_guard() -> Iterator[None]:
    """Every response of the service's routes must match the service's own description
    (tests/support/service_spec.py): statuses, shapes, types, no extra fields, no stray null."""
    from tests.support import wire_guard

    wire_guard.install()
    wire_guard.FINDINGS.take()  # nothing carried over from a previous test
    yield
    found = wire_guard.FINDINGS.take()
    if found:
        pytest.fail("responses that differ from the service's description:\n" + "\n".join(found[:20]))


# Fixtures shared by every folder of the suite (defined in tests/support/).
from tests.support.cli import cli, fake_runner  # noqa: E402, F401
from tests.support.modes import modes  # noqa: E402, F401
from tests.support.server import serve  # noqa: E402, F401
