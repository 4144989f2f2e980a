"""A private PostgreSQL cluster that a test may stop, restart, fill up or hold in recovery.

The shared PostgreSQL (``SOWCTL_TEST_DB``) is never stopped; a test of a database that goes
away starts its own: the cluster is made once per session (``initdb``) and copied for each
test, into a directory under the system's temporary directory (the postgres user cannot
reach pytest's), on 127.0.0.1 and a free port, with its socket in that directory. PostgreSQL
refuses to run as root, so when the suite does, every ``pg_ctl`` runs as ``postgres``.

``pg_cluster`` (a fixture) makes clusters; each one is stopped and removed after the test,
whatever its outcome.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

OWNER = "postgres"  # who runs PostgreSQL when the suite runs as root
DATABASE = "sowctl"
PG_CTL_TIMEOUT = 60  # seconds pg_ctl waits for a start or stop: a guard, not a speed assertion


def _bin(tool: str) -> str:
    """A PostgreSQL server program: the newest installed version's, else the one on PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"), key=_version)
    path = found[-1] if found else shutil.which(tool)
    if path is None:
        pytest.fail(f"PostgreSQL's {tool} is not installed (apt-get install postgresql)")
    return path


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", OWNER, "--", *command] if os.geteuid() == 0 else command


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _private_directory(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        shutil.chown(path, OWNER)
    return path


class Cluster:
    """One PostgreSQL cluster in ``root`` (its data in ``root/data``, its log ``root/log``)."""

    def __init__(self, root: Path, settings: dict[str, str]) -> None:
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self.settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(root),
            "fsync": "off",  # a test never survives a crash of the machine itself
            **settings,
        }

    @property
    def url(self) -> str:
        """The URL of the cluster's ``sowctl`` database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def start(self, *, standby: bool = False, wait: bool = True) -> None:
        """Start the server (``wait``: until it accepts connections); ``standby``: in recovery,
        as a standby with no primary, which refuses every connection with SQLSTATE 57P03
        ("the database system is not accepting connections") until ``promote``."""
        signal_file = self.data / "standby.signal"
        if standby:
            signal_file.touch()
            if os.geteuid() == 0:
                shutil.chown(signal_file, OWNER)
        options = " ".join(f"-c {name}={value}" for name, value in self.settings.items())
        if standby:
            options += " -c hot_standby=off"
        log = str(self.root / "log")
        self._pg_ctl("start", "-o", options, "-l", log, "-w" if wait and not standby else "-W")
        if standby:
            self._wait_for_postmaster()

    def _wait_for_postmaster(self) -> None:
        """Until the server answers connections (a standby: by refusing them, 57P03)."""
        import psycopg2

        deadline = time.monotonic() + PG_CTL_TIMEOUT
        while time.monotonic() < deadline:
            try:
                self.connect().close()
                return
            except psycopg2.OperationalError as exc:
                if "refused" not in str(exc) and "No such file" not in str(exc):
                    return
            time.sleep(0.05)
        raise AssertionError("the standby did not start listening")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: its sessions are ended; ``immediate``: as a crash)."""
        self._pg_ctl("stop", "-m", mode, "-w")

    def promote(self) -> None:
        """End a standby's recovery: it accepts connections from then on."""
        self._pg_ctl("promote", "-w")

    def running(self) -> bool:
        return self._pg_ctl("status", check=False).returncode == 0

    def connect(self, database: str = DATABASE):
        """A psycopg2 connection in autocommit mode, for what the test does besides sowctl."""
        import psycopg2

        connection = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=database)
        connection.autocommit = True
        return connection

    def sql(self, statement: str, database: str = DATABASE) -> None:
        connection = self.connect(database)
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement)
        finally:
            connection.close()

    def destroy(self) -> None:
        if self.data.exists() and self.running():
            self._pg_ctl("stop", "-m", "immediate", "-w", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = _as_owner([_bin("pg_ctl"), "-D", str(self.data), "-t", str(PG_CTL_TIMEOUT), *args])
        done = subprocess.run(command, capture_output=True, text=True, timeout=PG_CTL_TIMEOUT + 10)
        if check and done.returncode != 0:
            log = (
                (self.root / "log").read_text(errors="replace")[-2000:]
                if (self.root / "log").exists()
                else ""
            )
            raise AssertionError(f"pg_ctl {args[0]} failed: {done.stdout}{done.stderr}\n{log}")
        return done


@pytest.fixture(scope="session")
def pg_template() -> Iterator[Path]:
    """A cluster's data directory made once per session (per xdist worker), with a
    ``sowctl`` database; copied for each test."""
    root = _private_directory("sowctl-pg-template-")
    data = root / "data"
    try:
        initdb = [_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
        subprocess.run(_as_owner(initdb), check=True, capture_output=True, timeout=120)
        cluster = Cluster(root, {})
        cluster.start()
        try:
            cluster.sql(f"CREATE DATABASE {DATABASE}", database="postgres")
        finally:
            cluster.stop()
        yield data
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_cluster(pg_template: Path) -> Iterator[Callable[..., Cluster]]:
    """``make(**settings)``: a started cluster of its own (``max_connections="3"`` and the
    like go to the server's command line); all of them are stopped and removed afterwards."""
    made: list[Cluster] = []

    def make(**settings: str) -> Cluster:
        root = _private_directory("sowctl-pg-")
        # cp -a keeps the owner and the 0700 mode the server insists on.
        subprocess.run(["cp", "-a", str(pg_template), str(root / "data")], check=True)
        cluster = Cluster(root, settings)
        made.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.destroy()
