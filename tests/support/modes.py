"""One command in local mode and in remote mode, on the same database, in process.

``Modes.local(*args)`` runs ``sowctl ARGS`` on the test's database; ``Modes.remote(*args)``
runs it with ``--server`` against the real Bottle app on that same database, reached
through ``httpx.WSGITransport`` (no socket, no port), with a member token of the
organization the local SOW commands use (``local``) and an API key of ``ORG``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.support.client import SERVER
from tests.support.client import transport as wsgi_transport

LOCAL_ORG = "local"  # the organization `sows create` makes in local mode


@dataclass
class Modes:
    cli: Callable[..., object]
    token: str
    monkeypatch: pytest.MonkeyPatch
    db_url: str

    def local(self, *args: str, **kwargs):
        self.monkeypatch.setenv("SOWCTL_DB", self.db_url)
        return self.cli(*args, **kwargs)

    def remote(self, *args: str, token: str | None = None, **kwargs):
        self.monkeypatch.delenv("SOWCTL_DB", raising=False)
        return self.cli("--server", SERVER, "--token", token or self.token, *args, **kwargs)

    def both(self, *args: str, **kwargs) -> tuple[object, object]:
        return self.local(*args, **kwargs), self.remote(*args, **kwargs)


def install_wsgi_remote(monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    """Every RemoteBackend (commands and ``status`` alike) talks to the app in process."""
    from sowctl.backends.remote import RemoteBackend
    from sowctl.server.app import create_app

    app = create_app(db_url)
    original = RemoteBackend.__init__

    def init(self, settings, transport=None):
        original(self, settings, transport or wsgi_transport(app))

    monkeypatch.setattr(RemoteBackend, "__init__", init)


@pytest.fixture
def modes(cli, db, db_url, monkeypatch) -> Modes:
    """A SOW ``sow-1`` in organization ``local``, and both ways to reach it."""
    from sowctl.services import credentials

    result = cli("sows", "create", "Tower A", "--id", "sow-1")
    assert result.exit_code == 0, result.stderr
    token = credentials.create_token("user-1", LOCAL_ORG, "member").secret
    install_wsgi_remote(monkeypatch, db_url)
    return Modes(cli, token, monkeypatch, db_url)
