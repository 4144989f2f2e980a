"""The in-process client every HTTP test uses: an ``httpx.Client`` over ``httpx.WSGITransport``
of the real Bottle app (no socket, no port).

Responses go through the transport, so the autouse ``wire_guard`` fixture (tests/support/wire_guard.py)
checks them against the service's description as it does for every other client.
"""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest

BASE_URL = "http://test"
SERVER = "http://sowctl.test"  # what --server says when the CLI's remote mode is routed in process


def bearer(token: str) -> dict[str, str]:
    """The member/admin credential header."""
    return {"Authorization": f"Bearer {token}"}


def api_key(key: str, org: str, company: str | None = None) -> dict[str, str]:
    """The external (Group C) credential headers."""
    headers = {"x-api-key": key, "x-organization-id": org}
    if company is not None:
        headers["x-company-id"] = company
    return headers


def transport(app: Any, errors: io.StringIO | None = None) -> httpx.WSGITransport:
    """A transport into ``app``; the server's log (wsgi.errors) goes to ``errors``, not stderr."""
    return httpx.WSGITransport(app=app, wsgi_errors=errors if errors is not None else io.StringIO())


def wsgi_client(app: Any, *, base_url: str = BASE_URL, headers: dict[str, str] | None = None) -> httpx.Client:
    """A client of ``app``; ``client.app`` is the app and ``client.errors`` the server's log."""
    errors = io.StringIO()
    client = httpx.Client(transport=transport(app, errors), base_url=base_url, headers=headers)
    client.app, client.errors = app, errors  # type: ignore[attr-defined]
    return client


def app_client(
    db_url: str, settings: Any = None, *, base_url: str = BASE_URL, headers: dict[str, str] | None = None
) -> httpx.Client:
    """``create_app(db_url, settings)`` and a client of it."""
    from sowctl.server.app import create_app

    return wsgi_client(create_app(db_url, settings), base_url=base_url, headers=headers)


def remote_backend(app: Any, settings: Any):
    """A ``RemoteBackend`` with ``settings`` whose requests go to ``app`` in process."""
    from sowctl.backends.remote import RemoteBackend

    return RemoteBackend(settings, transport=transport(app))


def route_remote_in_process(monkeypatch: pytest.MonkeyPatch, app: Any) -> None:
    """The CLI's remote mode (``--server``) talks to ``app`` in process; local mode is unchanged."""
    from sowctl.commands._context import AppContext

    local_backend = AppContext.backend.func

    def backend(self):
        if self.settings.remote:
            return remote_backend(app, self.settings)
        return local_backend(self)

    monkeypatch.setattr(AppContext, "backend", property(backend))
