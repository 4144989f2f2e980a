"""Helpers for the tests of ``sowctl serve`` as a test double (admin API, faults, clock, CORS, record).

``in_process`` is the shared in-process client (tests/support/client.py) of an app with the
admin API on; ``tests.support.server.Server`` runs the real ``sowctl serve`` in a subprocess on
a free port, for what needs sockets and worker processes.
"""

from __future__ import annotations

import datetime
from typing import Any

import httpx

from sowctl.services import demo_data
from tests.support.client import api_key, app_client, bearer

__all__ = ["bearer"]  # re-exported: the double's tests take every helper from here

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


def external(key: str) -> dict[str, str]:
    """The API-key headers of the demo organization and company."""
    return api_key(key, ORG, COMPANY)


def in_process(db_url: str, *, admin: bool = True, **settings: Any) -> httpx.Client:
    """A client of an in-process app on ``db_url`` (admin API on by default), emptied first."""
    from sowctl.server.configuration import ServerSettings
    from sowctl.server.testdouble.state import reset_database

    settings_ = ServerSettings(admin_token=ADMIN_TOKEN if admin else None, **settings)
    client = app_client(db_url, settings_, base_url="http://double.test")
    reset_database()  # a shared PostgreSQL test database keeps other tests' request log and settings
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
