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

import httpx
import peewee as pw
import psycopg2
import pytest

from sowctl.foundation.errors import ServiceUnavailable
from sowctl.storage import guards, models
from sowctl.storage.database import open_database
from tests.support.client import app_client
from tests.support.doubles import SOW, bearer, in_process, load
from tests.support.server import Server, demo_secrets


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
    health = client.get("/readyz")
    assert health.status_code == 503 and health.headers["Retry-After"] == "1"


def test_removed_database_file_503_does_not_name_the_server_path(tmp_path: Path) -> None:
    path = tmp_path / "served.db"
    client = in_process(str(path))
    try:
        auth = bearer(load(client)["token"])
        path.unlink()
        refused = client.post(f"/api/sow/{SOW}/items", json={"title": "t", "type": "task_item"}, headers=auth)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"].startswith("the database file was removed or replaced")
        assert str(tmp_path) not in refused.text
    finally:
        client.close()


def test_removed_database_file_error_keeps_the_path_for_the_operator() -> None:
    error = guards.DatabaseFileReplaced("/srv/s.db")
    assert "/srv/s.db" in error.message and "/srv/s.db" not in error.api_message


@pytest.fixture
def immutable(tmp_path: Path):
    """``make(path, True/False)`` sets or clears the immutable attribute (``chattr +i``), which
    stops root from writing too (chmod would not); skipped where the file system has none."""
    probe = tmp_path / "probe"
    probe.touch()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(probe)]).returncode:
        pytest.skip("no chattr +i on this file system")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    made: list[Path] = []

    def make(path: Path, on: bool) -> None:
        subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True)
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def test_writes_refused_while_the_file_is_unwritable_recover_once_it_is_writable(
    sqlite_server, immutable
) -> None:
    """Before: a connection opened while the file could not be written was silently read-only
    and answered 503 "attempt to write a readonly database" forever after."""
    client, auth, path = sqlite_server
    assert _create(client, auth, "before").status_code == 201
    immutable(path, True)
    models.database_proxy.obj.close()  # the next request opens a connection now, as a new thread would
    refused = _create(client, auth, "refused")
    assert refused.status_code == 503 and refused.headers["Retry-After"], refused.text
    assert client.get(f"/api/sow/{SOW}/items", headers=auth).status_code == 200  # reads go on
    assert client.get("/readyz").status_code == 503
    immutable(path, False)
    assert _create(client, auth, "after").status_code == 201  # the very first write after
    assert client.get("/readyz").status_code == 200
    titles = {item["title"] for item in client.get(f"/api/sow/{SOW}/items", headers=auth).json()}
    assert {"before", "after"} <= titles and "refused" not in titles
    # A connection opened by a read while the file was unwritable, and not yet refused any
    # write (an app without the test double's request log, which writes after every request):
    # its first write once the file is writable succeeds too.
    # (No other connection to the file stays open: SQLite would reuse its read-write descriptor.)
    models.database_proxy.obj.close()
    plain = app_client(str(path))
    immutable(path, True)
    assert plain.get(f"/api/sow/{SOW}/items", headers=auth).status_code == 200
    immutable(path, False)
    assert _create(plain, auth, "first write").status_code == 201
    plain.close()


def test_a_connection_that_met_a_read_only_error_is_replaced(sqlite_server, immutable, monkeypatch) -> None:
    # The file looked writable when the connection opened (so it is not known to be read-only),
    # yet SQLite opened it read-only: the write's error itself must drop the connection.
    client, auth, path = sqlite_server
    immutable(path, True)
    monkeypatch.setattr(guards.os, "access", lambda *args, **kwargs: True)
    models.database_proxy.obj.close()
    assert _create(client, auth, "refused").status_code == 503
    immutable(path, False)
    assert _create(client, auth, "after").status_code == 201


@pytest.mark.slow  # a real server with two workers
def test_a_served_file_made_unwritable_refuses_writes_and_every_write_succeeds_once_writable(
    tmp_path: Path, immutable
) -> None:
    """The audit's run: ``serve --workers 2``, a read, ``chattr +i``, writes, ``chattr -i``.
    Before, about half the writes after ``chattr -i`` got 503 for good (each thread that
    connected meanwhile kept a read-only connection)."""
    path = tmp_path / "served.db"
    server = Server(path, "--demo", "--workers", "2")
    try:
        token, _ = demo_secrets("\n".join(server.read_stdout_until("API key")))
        auth = {"Authorization": f"Bearer {token}"}

        def write(title: str) -> httpx.Response:
            with httpx.Client(base_url=server.url, timeout=10) as client:  # a new connection each
                return _create(client, auth, title)

        assert server.client.get(f"/api/sow/{SOW}/items", headers=auth).status_code == 200
        immutable(path, True)
        # Every write refused alike: a connection opened before could still write (into the
        # WAL), and did, so writes succeeded or failed by which thread took them.
        meanwhile = [write(f"meanwhile {n}") for n in range(24)]
        assert {(a.status_code, a.headers.get("Retry-After")) for a in meanwhile} == {(503, "1")}
        assert server.client.get("/readyz").status_code == 503
        immutable(path, False)
        after = [write(f"after {n}") for n in range(24)]
        assert [answer.status_code for answer in after] == [201] * 24, [a.text for a in after if a.is_error]
        listed = server.client.get(f"/api/sow/{SOW}/items", headers=auth, params={"limit": 100})
        titles = {item["title"] for item in listed.json()}
        assert {a.json()["title"] for a in after} <= titles
        assert server.client.get("/readyz").status_code == 200
    finally:
        server.stop()


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


def test_a_full_disk_is_a_503_with_one_log_line_and_readyz_says_so(small_disk) -> None:
    """Before: 500 with a 70-line traceback per request, and /readyz 200."""
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
    assert client.get("/readyz").status_code == 503
    titles = {item["title"] for item in client.get(f"/api/sow/{SOW}/items", headers=auth).json()}
    assert answer.request.content.decode().count("x" * 4000) and not any(
        t.endswith(str(attempt)) and t.startswith("x" * 4000) for t in titles
    )  # the refused item is not half-stored

    resize("16m")  # space again: the probe write succeeds, and so do writes
    assert client.get("/readyz").status_code == 200
    assert _create(client, auth, "after").status_code == 201
    client.close()


def test_a_database_file_overwritten_with_something_else_is_a_503_and_readyz_says_so(sqlite_server) -> None:
    """SQLITE_NOTADB (and SQLITE_CORRUPT alike): no bug of sowctl's, the storage failed; the
    operator restores the file. Before: 500 with a traceback per request."""
    client, auth, path = sqlite_server
    models.database_proxy.obj.close()  # the next request opens the file anew, as a new thread would
    with open(path, "r+b") as file:  # the same file (inode), its header overwritten
        file.write(b"\xff" * 4096)
    answer = client.get(f"/api/sow/{SOW}/items", headers=auth)
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1", answer.text
    assert answer.json() == {"error": "the database cannot store anything now; retry later"}
    assert client.get("/readyz").status_code == 503
    log = client.errors.getvalue().splitlines()
    assert len(log) == 2 and all("(SQLITE_NOTADB): file is not a database" in line for line in log), log


class _DiskFull(psycopg2.OperationalError):
    """What psycopg2 raises when PostgreSQL's disk is full (SQLSTATE 53100)."""

    pgcode = "53100"


def test_a_full_database_server_disk_is_a_503_and_readyz_says_so_until_a_write_succeeds(
    migrated_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """53100 disk_full from PostgreSQL (made up here: the code is what counts). Before: 500."""
    from sowctl.services import items

    client = in_process(migrated_db_url)
    auth = bearer(load(client)["token"])
    full = _DiskFull('could not extend file "base/16384/16500": No space left on device')

    def disk_full(*args, **kwargs):
        raise pw.OperationalError(full, *full.args)

    with monkeypatch.context() as full_disk:
        full_disk.setattr(items, "create_item", disk_full)
        full_disk.setattr(models.Meta, "insert", disk_full)  # /readyz's probe write fails too
        refused = _create(client, auth, "refused")
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1", refused.text
        assert refused.json() == {"error": "the database cannot store anything now; retry later"}
        log = client.errors.getvalue()
        assert "Traceback" not in log
        assert log.count("database cannot store (53100 disk_full): could not extend file") == 1
        assert client.get("/readyz").status_code == 503  # until its probe write succeeds
    # Room again:
    assert client.get("/readyz").status_code == 200
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
    """Before: a frozen PostgreSQL made every request and /readyz hang without end."""
    monkeypatch.setattr(guards, "DB_TIMEOUT_SECONDS", 0.5)
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
    """/readyz's own deadline (guards.deadline) applies although the general one is long."""
    monkeypatch.setattr(guards, "DB_TIMEOUT_SECONDS", 3600)
    outcome: list[BaseException] = []

    def open_frozen() -> None:
        try:
            with guards.deadline(0.5):
                open_database(f"postgresql://postgres@127.0.0.1:{silent_server}/frozen")
        except BaseException as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_frozen, daemon=True)
    opener.start()
    opener.join(timeout=60)  # far below the general deadline: only the short one can end it
    assert not opener.is_alive(), "the short deadline did not apply"
    assert isinstance(outcome[0], ServiceUnavailable) and "0.5 s" in str(outcome[0])
    assert guards.current_timeout() == 3600  # the override ends with the block


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_timeout_variable_is_refused_naming_it(value, monkeypatch, tmp_path: Path) -> None:
    from sowctl.foundation.errors import UsageError

    monkeypatch.setenv("SOWCTL_DB_TIMEOUT", value)
    with pytest.raises(UsageError, match="SOWCTL_DB_TIMEOUT must be a positive number of seconds"):
        open_database(str(tmp_path / "x.db"))


def test_an_idle_connection_is_dead_once_its_server_sent_something_or_hung_up() -> None:
    """The check before each request (guards._readable): nothing to read is alive; a
    farewell or an end of file is not."""
    ours, server = socket.socketpair()
    try:
        assert guards._readable(ours.fileno()) is False
        server.sendall(b"E")  # what PostgreSQL sends first when it ends a connection (an ErrorResponse)
        assert guards._readable(ours.fileno()) is True
        ours.recv(1)
        assert guards._readable(ours.fileno()) is False
        server.close()
        assert guards._readable(ours.fileno()) is True  # end of file
    finally:
        ours.close()
