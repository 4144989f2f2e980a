"""Failing storage: a refused write is 503 with Retry-After, never an acknowledged loss.

These build their own SQLite file (the failures are SQLite's); the deadline test talks
to a fake PostgreSQL server that accepts connections and never answers.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from sowctl import db_guards
from sowctl.db import open_database
from sowctl.errors import ServiceUnavailable
from tests.support.doubles import SOW, bearer, in_process, load


@pytest.fixture
def sqlite_server(tmp_path: Path):
    path = tmp_path / "served.db"
    client = in_process(str(path))
    credentials = load(client)
    yield client, bearer(credentials["token"]), path
    client.close()


def _create(client, auth, title: str):
    return client.post(f"/api/sow/{SOW}/items", json={"title": title, "type": "task_item"}, headers=auth)


def test_a_removed_database_file_refuses_writes_instead_of_losing_them(sqlite_server) -> None:
    """Before: 210 writes were acknowledged after the file was deleted, all lost at restart."""
    client, auth, path = sqlite_server
    assert _create(client, auth, "kept").status_code == 201
    path.unlink()
    refused = _create(client, auth, "would be lost")
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"]
    assert "removed or replaced" in refused.json()["error"]
    health = client.get("/healthz")
    assert health.status_code == 503 and health.headers["Retry-After"] == "1"


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real file system of its own (tmpfs), so that it can fill up and grow again."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)

    def resize(size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(mount)], check=True)

    yield mount, resize
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_503_with_one_log_line_and_healthz_says_so(small_disk) -> None:
    """Before: 500 with a 70-line traceback per request, and /healthz 200."""
    mount, resize = small_disk
    client = in_process(str(mount / "served.db"))
    auth = bearer(load(client)["token"])
    used = shutil.disk_usage(mount).used
    resize(f"{used // 1024 + 64}k")
    for attempt in range(400):
        answer = _create(client, auth, "x" * 4000 + str(attempt))
        if answer.status_code != 201:
            break
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"]
    log = client.errors.getvalue()
    assert "Traceback" not in log and "database or disk is full" in log
    assert client.get("/healthz").status_code == 503
    titles = {item["title"] for item in client.get(f"/api/sow/{SOW}/items", headers=auth).json()}
    assert answer.request.content.decode().count("x" * 4000) and not any(
        t.endswith(str(attempt)) and t.startswith("x" * 4000) for t in titles
    )  # the refused item is not half-stored

    resize("16m")  # space again: the probe write succeeds, and so do writes
    assert client.get("/healthz").status_code == 200
    assert _create(client, auth, "after").status_code == 201
    client.close()


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never says a word (a frozen database)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


def test_a_database_server_that_never_answers_fails_within_the_deadline(silent_server, monkeypatch) -> None:
    """Before: a frozen PostgreSQL made every request and /healthz hang without end."""
    monkeypatch.setattr(db_guards, "DB_TIMEOUT_SECONDS", 0.5)
    outcome: list[BaseException] = []

    def open_frozen() -> None:
        try:
            open_database(f"postgresql://postgres@127.0.0.1:{silent_server}/frozen")
        except BaseException as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_frozen, daemon=True)
    opener.start()
    opener.join(timeout=60)  # a guard against the hang itself, not a speed assertion
    assert not opener.is_alive(), "connecting to a silent database server hung"
    assert len(outcome) == 1 and isinstance(outcome[0], ServiceUnavailable), outcome
    assert "timeout" in str(outcome[0])


def test_a_shorter_deadline_bounds_the_calls_inside_it(silent_server, monkeypatch) -> None:
    """/healthz's own deadline (db_guards.deadline) applies although the general one is long."""
    monkeypatch.setattr(db_guards, "DB_TIMEOUT_SECONDS", 3600)
    outcome: list[BaseException] = []

    def open_frozen() -> None:
        try:
            with db_guards.deadline(0.5):
                open_database(f"postgresql://postgres@127.0.0.1:{silent_server}/frozen")
        except BaseException as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_frozen, daemon=True)
    opener.start()
    opener.join(timeout=60)  # far below the general deadline: only the short one can end it
    assert not opener.is_alive(), "the short deadline did not apply"
    assert isinstance(outcome[0], ServiceUnavailable) and "0.5 s" in str(outcome[0])
    assert db_guards.current_timeout() == 3600  # the override ends with the block


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_timeout_variable_is_refused_naming_it(value, monkeypatch, tmp_path: Path) -> None:
    from sowctl.errors import UsageError

    monkeypatch.setenv("SOWCTL_DB_TIMEOUT", value)
    with pytest.raises(UsageError, match="SOWCTL_DB_TIMEOUT must be a positive number of seconds"):
        open_database(str(tmp_path / "x.db"))
