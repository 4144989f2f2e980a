"""Helpers for the tests of ``sowctl serve`` as a test double (admin API, faults, clock, CORS, record).

``in_process`` builds the app with ``ServerSettings`` and drives it through
``httpx.WSGITransport``; ``tests.support.server.Server`` runs the real ``sowctl serve`` in a
subprocess on a free port, for what needs sockets and worker processes.
"""

from __future__ import annotations

import datetime
import io
import sys
import types
from pathlib import Path
from typing import Any

import httpx
import pytest

from sowctl import demo_data
from tests.support.server import Server

TODAY = datetime.date(2026, 1, 1)
ADMIN_TOKEN = "test-admin-token"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
STARTUP_TIMEOUT = 30.0

ORG = demo_data.DEMO_ORG
COMPANY = demo_data.DEMO_COMPANY
SOW = demo_data.DEMO_SOW
FINANCIAL_PROJECT = demo_data.DEMO_PROJECT_ID


def dataset() -> dict[str, Any]:
    """The demo dataset, dated as of TODAY (so it does not depend on the day the tests run)."""
    return demo_data.demo_dataset(TODAY)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def external(key: str) -> dict[str, str]:
    return {"x-api-key": key, "x-organization-id": ORG, "x-company-id": COMPANY}


def in_process(db_url: str, *, admin: bool = True, **settings: Any) -> httpx.Client:
    """A client of an in-process app on ``db_url`` (admin API on by default), emptied first."""
    from sowctl.server.app import create_app
    from sowctl.server.settings import ServerSettings
    from sowctl.testdouble.state import reset_database

    app = create_app(db_url, ServerSettings(admin_token=ADMIN_TOKEN if admin else None, **settings))
    reset_database()  # a shared PostgreSQL test database keeps other tests' request log and settings
    errors = io.StringIO()  # the server's log (wsgi.errors), instead of the test's stderr
    transport = httpx.WSGITransport(app=app, wsgi_errors=errors)
    client = httpx.Client(transport=transport, base_url="http://double.test")
    client.app, client.errors = app, errors  # type: ignore[attr-defined]
    return client


def load(client: httpx.Client, data: dict[str, Any] | None = None) -> dict[str, str]:
    """Load the dataset through /_admin and return a member token and an API key of its org."""
    loaded = client.post("/_admin/dataset", json=data or dataset(), headers=ADMIN)
    assert loaded.status_code == 200, loaded.text
    token = client.post(
        "/_admin/tokens",
        json={"userId": demo_data.DEMO_USER, "organizationId": ORG, "role": "member"},
        headers=ADMIN,
    )
    key = client.post("/_admin/keys", json={"organizationId": ORG}, headers=ADMIN)
    assert token.status_code == key.status_code == 201, (token.text, key.text)
    return {"token": token.json()["token"], "key": key.json()["key"]}


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Replace ``sowctl.server.runner`` so ``serve`` builds its app, calls on_ready, and returns."""
    seen: dict = {}

    def serve(
        app_factory, *, host, port, workers=1, threads=4, on_ready=None, access_log=True, settings=None
    ):
        seen.update(workers=workers)
        seen["app"] = app_factory()
        if on_ready is not None:
            on_ready(f"http://{host}:{port or 54321}")

    module = types.ModuleType("sowctl.server.runner")
    module.serve = serve  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sowctl.server.runner", module)
    import sowctl.server

    monkeypatch.setattr(sowctl.server, "runner", module, raising=False)
    return seen


@pytest.fixture
def serve(tmp_path: Path):
    """Start real servers (``serve(db, *args)``); all of them are stopped after the test."""
    servers: list[Server] = []

    def start(db: Path | None = None, *args: str) -> Server:
        server = Server(db or tmp_path / "served.db", *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
