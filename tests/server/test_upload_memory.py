"""What uploads can make a worker hold in memory: a cap on bytes buffered across its
connections (``SOWCTL_SERVE_BUFFER_MIB``), and the admin's 256 MiB dataset uploads
authenticated from their head, before any of the body is buffered.

Before: each request was buffered whole before a thread ran it, so 1,000 connections x
1 MiB held about 1 GiB per worker, and anyone could make the worker buffer 256 MiB on
``POST /_admin/dataset`` before the token was checked.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sowctl.services import demo_data
from tests.support.server import Server, demo_secrets
from tests.support.sockets import read_answer

pytestmark = pytest.mark.slow  # real servers: the full suite only

KIB = 1024
MIB = 1024 * KIB
BODY = MIB  # the API's limit: each upload is as large as it may be
SENT = 900 * KIB  # what each stalled upload sends before stopping
NO_HANG = 20


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[tuple[Server, str]]:
    # 2 MiB: two stalled uploads of 900 KiB fit (64 KiB each is not counted), a third does not.
    server = Server(tmp_path / "cap.db", "--demo", "--workers", "1", env={"SOWCTL_SERVE_BUFFER_MIB": "2"})
    token, _ = demo_secrets("\n".join(server.read_stdout_until("API key")))
    yield server, token
    server.stop()


def _item_body(title: str) -> bytes:
    """A valid item, padded with JSON whitespace to exactly BODY bytes."""
    text = json.dumps({"title": title, "type": "task_item"}).encode()
    return text[:-1] + b" " * (BODY - len(text)) + b"}"


def test_large_uploads_past_the_workers_cap_get_503_and_small_requests_go_on(capped) -> None:
    server, token = capped
    url = httpx.URL(server.url)
    head = (
        f"POST /api/sow/{demo_data.DEMO_SOW}/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {BODY}\r\n\r\n"
    ).encode()
    bodies = [_item_body(f"large {index}") for index in range(3)]
    sockets = [socket.create_connection((url.host, url.port), timeout=NO_HANG) for _ in range(3)]
    try:
        for sock, body in zip(sockets, bodies, strict=True):
            sock.sendall(head + body[:SENT])
        readable, _, _ = select.select(sockets, [], [], NO_HANG)
        assert len(readable) == 1, "exactly the upload past the cap is answered at once"
        refused = readable[0]
        status, headers, answer = read_answer(refused)
        assert status.startswith("HTTP/1.1 503") and headers["retry-after"] == "1"
        assert "retry later" in json.loads(answer)["error"]  # Group A's envelope

        # Ordinary requests are not held up by the cap while the two uploads stall.
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.url, timeout=NO_HANG, headers=auth) as client:
            assert client.get("/healthz").status_code == 200
            small = client.post(
                f"/api/sow/{demo_data.DEMO_SOW}/items", json={"title": "small", "type": "task_item"}
            )
            assert small.status_code == 201

        # The two that fit finish and are stored; their memory is free again afterwards.
        for sock, body in zip(sockets, bodies, strict=True):
            if sock is not refused:
                sock.sendall(body[SENT:])
                assert read_answer(sock)[0].startswith("HTTP/1.1 201")
    finally:
        for sock in sockets:
            sock.close()
    with socket.create_connection((url.host, url.port), timeout=NO_HANG) as again:
        again.sendall(head + bodies[0])
        assert read_answer(again)[0].startswith("HTTP/1.1 201")


@pytest.mark.parametrize("value", ["lots", "0"])
def test_a_bad_buffer_cap_is_refused_naming_the_variable(tmp_path: Path, value: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "sowctl", "--db", str(tmp_path / "x.db"), "serve", "--port", "0"],
        env={"PATH": "/usr/bin:/bin", "SOWCTL_SERVE_BUFFER_MIB": value, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "SOWCTL_SERVE_BUFFER_MIB must be a whole number of MiB" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def admin_server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path / "admin.db", "--admin")
    yield server
    server.stop()


def test_a_dataset_upload_is_authenticated_before_its_body_is_read(admin_server: Server) -> None:
    url = httpx.URL(admin_server.url)
    announced = 200 * MIB  # within the dataset limit; not a byte of it is sent

    def head(authorization: str) -> bytes:
        return (
            "POST /_admin/dataset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"{authorization}Content-Length: {announced}\r\nExpect: 100-continue\r\n\r\n"
        ).encode()

    for authorization in ("", "Authorization: Bearer sowa_wrong\r\n", "Authorization: Basic eDp5\r\n"):
        with socket.create_connection((url.host, url.port), timeout=NO_HANG) as sock:
            sock.sendall(head(authorization))
            status, headers, body = read_answer(sock)
            assert status.startswith("HTTP/1.1 401"), (authorization, status)
            assert headers["connection"] == "close" and json.loads(body)["error"]
    # The admin is invited to send it.
    assert admin_server.admin_token
    with socket.create_connection((url.host, url.port), timeout=NO_HANG) as sock:
        sock.sendall(head(f"Authorization: Bearer {admin_server.admin_token}\r\n"))
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
