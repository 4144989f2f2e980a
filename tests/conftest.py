"""Shared fixtures: an isolated database and config per test; the CLI runner, the fake server
runner, real servers and the two-modes helper come from tests/support/.

The backend under test is chosen by SOWCTL_TEST_DB: unset or "sqlite" gives a fresh
SQLite file per test; a postgresql:// URL runs the suite on PostgreSQL (see
``tests/support/pg.py``).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from sowctl.foundation import clock
from sowctl.services.access import Caller
from sowctl.storage import guards
from sowctl.storage.database import open_database

# Compiled modules are cached even where the environment says not to (container images set
# PYTHONDONTWRITEBYTECODE): otherwise every run compiles, and rewrites the asserts of, every
# test module again (~5 s of CPU per pytest process), and every `sowctl` subprocess a test
# starts compiles sowctl again (~0.6 s each). Subprocesses inherit os.environ.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Each test's files (tmp_path: its SQLite database, config, exports) go to memory where the
# system has a tmpfs: most tests write and fsync a database, and on disk that cost some 7% of
# the quick loop's CPU and more of its time. pytest reads the variable when it first makes a
# test's directory; xdist's workers are given directories under the controller's.
if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", "/dev/shm")

# Property tests replay the same examples on every run, so a CI run cannot fail by
# chance; SOWCTL_TEST_HYPOTHESIS=explore draws new ones (a bug hunt, not a gate). Neither
# judges by the clock (per-example deadline, "generation is slow"): on a loaded CI
# machine those fail by chance too; the properties themselves are what is asserted.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
hypothesis_settings.register_profile("replay", derandomize=True, database=None, **_UNTIMED)
hypothesis_settings.register_profile("explore", derandomize=False, database=None, **_UNTIMED)
hypothesis_settings.load_profile(os.environ.get("SOWCTL_TEST_HYPOTHESIS", "replay"))


# A module whose every test is slow says so in one line (``pytestmark = pytest.mark.slow``, or
# a list that starts with it).
_ALL_SLOW = re.compile(r"^pytestmark = \[?pytest\.mark\.slow\b", re.MULTILINE)
_MARK_NAMES = re.compile(r"(?:\w|[:+\-.\[\]\\/])+")


def _deselects_slow(markexpr: str) -> bool:
    """Whether ``-m MARKEXPR`` leaves out every test marked slow, whatever its other marks."""
    from _pytest.mark.expression import Expression

    if not markexpr or "(" in markexpr:  # marker keyword arguments: not worth deciding here
        return False
    expression = Expression.compile(markexpr)
    others = sorted(set(_MARK_NAMES.findall(markexpr)) - {"slow", "and", "or", "not"})
    if len(others) > 8:
        return False
    for chosen in itertools.product([False, True], repeat=len(others)):
        marks = {"slow", *itertools.compress(others, chosen)}
        if expression.evaluate(lambda name, marks=marks, **_: name in marks):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The quick loop (``-m "not slow"``) does not import the modules that are slow throughout:
    all their tests would be deselected anyway, and building some of them (the schema
    fuzzing's parametrisation) costs seconds in every xdist worker."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if not _deselects_slow(config.getoption("markexpr", "")):
        return None
    return True if _ALL_SLOW.search(collection_path.read_text(encoding="utf-8")) else None


# The folders whose tests are about the database itself: the core's rules as SQL, storage,
# locks, SQLSTATEs, outages. Each of their tests that gets a database (db_url) is marked
# ``database`` without saying so; elsewhere a module or test says it (``pytest.mark.database``).
_DATABASE_FOLDERS = ("db", "services")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``database`` the tests whose result can depend on the backend: the PostgreSQL pass
    of .ci/run runs only those (``-m database``); the rest prove what they prove once.

    Under pytest-xdist the slow tests go first (in their order): the workers are dealt them
    in turn and the quick ones fill the gaps, instead of one worker starting a minute-long
    test when the other has nothing left to do."""
    tests = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(tests).parts[0] if item.path.is_relative_to(tests) else ""
        if folder in _DATABASE_FOLDERS and "db_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.database)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite file at the current schema version, made once per session (per worker)."""
    path = tmp_path_factory.mktemp("template") / "migrated.db"
    open_database(str(path)).close()
    return path


@pytest.fixture
def migrated_db_url(db_url: str, migrated_sqlite: Path) -> str:
    """``db_url`` with the current schema in place, not opened: for fixtures that build an app
    on it. On SQLite a copy of the file that migrating a new one makes: creating the schema
    costs ~15 ms of CPU, and most of the suite's tests start from a new database."""
    if not db_url.startswith("postgres") and not os.path.exists(db_url):
        shutil.copyfile(migrated_sqlite, db_url)
    return db_url


@pytest.fixture
def db(migrated_db_url: str):
    """The opened database (models bound), for tests that call the core directly."""
    database = open_database(migrated_db_url)
    yield database
    database.close()


@pytest.fixture
def unhurried_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """For stress tests: a database call may take as long as it takes on a loaded machine. The
    deadline of each call (30 s) guards against a server that stopped answering, and has tests
    of its own (tests/db/test_storage_faults.py); a 6,000-item recursive query on a busy
    PostgreSQL can pass it with nothing wrong."""
    monkeypatch.setattr(guards, "DB_TIMEOUT_SECONDS", 3600)


@pytest.fixture
def local() -> Caller:
    return Caller.local()


@pytest.fixture(autouse=True)
def wire_guard() -> Iterator[None]:
    """Every response of the service's routes must match the service's own description
    (sowctl/conformance/description.py): statuses, shapes, types, no extra fields, no stray null."""
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
from tests.support.pg_cluster import pg_cluster, pg_template  # noqa: E402, F401
from tests.support.server import serve  # noqa: E402, F401
