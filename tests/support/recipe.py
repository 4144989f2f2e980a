"""deploy/local's recipe run by a test: a throwaway PostgreSQL database, up.sh, down.sh.

The recipe needs Debian's haproxy and pgbouncer and a PostgreSQL server (CI installs and
starts them); without them the test is skipped, saying which is missing. The database is
the server at ``SOWCTL_TEST_DEPLOY_DB`` (default: the local one, as the postgres user).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "deploy" / "local"
SERVER_URL = os.environ.get("SOWCTL_TEST_DEPLOY_DB", "postgresql://postgres@127.0.0.1:5432/postgres")
RECIPE_TIMEOUT = 180  # seconds up.sh or down.sh may take: a guard against a hang, not a speed check


def sowctl_program() -> str:
    """This environment's sowctl script (the one installed beside the running Python)."""
    return str(Path(sys.executable).with_name("sowctl"))


def require_tools() -> None:
    """Skip, naming what is missing, unless haproxy, pgbouncer and PostgreSQL are here."""
    missing = [tool for tool in ("haproxy", "pgbouncer") if shutil.which(tool, path=_sbin_path()) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (apt-get install -y haproxy pgbouncer)")
    parts = urlsplit(SERVER_URL)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5432), timeout=2).close()
    except OSError:
        pytest.skip(f"no PostgreSQL server at {parts.hostname}:{parts.port or 5432}")


def _sbin_path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def _admin(sql: str) -> None:
    import psycopg2

    parts = urlsplit(SERVER_URL)
    connection = psycopg2.connect(
        dbname=parts.path.lstrip("/") or "postgres",
        user=parts.username or "postgres",
        password=parts.password,
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
    )
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
    finally:
        connection.close()


@dataclass
class Recipe:
    """One run of up.sh: where it lives and what it printed."""

    run_dir: Path
    database_url: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.env["SOWCTL_URL"]

    @property
    def pooled_url(self) -> str:
        return self.env["SOWCTL_POOLED_URL"]

    def instance_ports(self) -> list[int]:
        return [int(port) for port in self.env["SOWCTL_INSTANCE_PORTS"].strip('"').split()]

    def instance_group(self, number: int) -> int:
        return int((self.run_dir / f"instance-{number}.pid").read_text())

    def sowctl(self, *args: str) -> str:
        """Run sowctl in local mode on the pooled database; its output."""
        done = subprocess.run(
            [sowctl_program(), "--db", self.pooled_url, *args],
            capture_output=True,
            text=True,
            timeout=RECIPE_TIMEOUT,
            env=self.process_env(),
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def process_env(self) -> dict[str, str]:
        return {**os.environ, "PATH": _sbin_path(), "SOWCTL_PG_PREPARE": "off"}

    def down(self) -> None:
        if self.run_dir.exists():
            subprocess.run([str(LOCAL / "down.sh"), str(self.run_dir)], check=True, timeout=RECIPE_TIMEOUT)


def start(tmp_path: Path, **env: str) -> Recipe:
    """A new database and the recipe on it (up.sh, with ``env`` added to its environment)."""
    name = f"sowctl_deploy_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    _admin(f'CREATE DATABASE "{name}"')
    database_url = urlunsplit(urlsplit(SERVER_URL)._replace(path="/" + name))
    recipe = Recipe(run_dir=tmp_path / "run", database_url=database_url)
    up_env = {
        **recipe.process_env(),
        "SOWCTL": sowctl_program(),
        "SOWCTL_DEPLOY_DATABASE_URL": database_url,
        **env,
    }
    try:
        subprocess.run(
            [str(LOCAL / "up.sh"), str(recipe.run_dir)],
            check=True,
            capture_output=True,
            text=True,
            timeout=RECIPE_TIMEOUT,
            env=up_env,
        )
    except subprocess.CalledProcessError as exc:
        drop(recipe)
        pytest.fail(f"up.sh failed: {exc.stderr}")
    for line in (recipe.run_dir / "env").read_text().splitlines():
        key, _, value = line.partition("=")
        recipe.env[key] = value
    return recipe


def drop(recipe: Recipe) -> None:
    name = urlsplit(recipe.database_url).path.lstrip("/")
    _admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
    _admin(f'DROP DATABASE IF EXISTS "{name}"')


def kill_instance(recipe: Recipe, number: int) -> None:
    """SIGKILL instance ``number`` (its whole process group) and return once its port refuses
    connections: from then on no request can reach it."""
    port = recipe.instance_ports()[number - 1]
    os.killpg(recipe.instance_group(number), signal.SIGKILL)
    deadline = time.monotonic() + RECIPE_TIMEOUT
    while not refuses(port):
        if time.monotonic() > deadline:
            pytest.fail(f"instance {number} still accepts connections after SIGKILL")
        time.sleep(0.005)


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False
