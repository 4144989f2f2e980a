"""``sowctl.Client``: one method per operation, lists that page for you, errors as typed exceptions."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sowctl
from sowctl import Client, Forbidden, InvalidInput, NotFound, Unauthorized
from tests.support.client import transport as wsgi_transport
from tests.support.doubles import COMPANY, FINANCIAL_PROJECT, ORG, SOW, in_process, load


@pytest.fixture
def api(migrated_db_url: str):
    http = in_process(migrated_db_url)
    access = load(http)
    transport = wsgi_transport(http.app)  # type: ignore[attr-defined]
    with Client(
        "http://double.test",
        token=access["token"],
        api_key=access["key"],
        org=ORG,
        company=COMPANY,
        retries=0,
        transport=transport,
    ) as client:
        yield client


def test_items_create_get_update_list_and_delete(api: Client) -> None:
    created = api.items.create(SOW, title="Made by the client", type="requirement")
    assert api.items.get(created["id"])["title"] == "Made by the client"
    api.items.update(created["id"], title="Renamed")
    assert "Renamed" in [item["title"] for item in api.items.list(SOW)]
    api.items.delete(created["id"])
    with pytest.raises(NotFound):
        api.items.get(created["id"])


def test_lists_fetch_every_page(api: Client) -> None:
    before = len(api.items.list(SOW))
    for n in range(130 - before):
        api.items.create(SOW, {"title": f"bulk {n}", "type": "requirement"})
    items = api.items.list(SOW)
    assert len(items) == 130  # more than one page of 100
    assert len({item["id"] for item in items}) == 130


def test_every_resource_has_its_methods(api: Client) -> None:
    assert any(sow["id"] == SOW for sow in api.sows.list())
    deps = api.deps.list(sow_id=SOW)
    assert deps and api.deps.get(deps[0]["id"])["id"] == deps[0]["id"]
    assert api.chain.get(SOW)
    assert api.projects.list()["projects"]
    assert "clients" in api.clients.list()
    assert api.finance.budget_views(FINANCIAL_PROJECT)
    assert api.finance.purchase_orders(FINANCIAL_PROJECT)


def test_errors_are_the_typed_exceptions(api: Client, db_url: str) -> None:
    with pytest.raises(InvalidInput) as bad:
        api.items.create(SOW, title="", type="requirement")
    assert bad.value.message.startswith("title")
    with pytest.raises(NotFound):
        api.items.list("no-such-sow")
    anonymous = Client("http://double.test", token="sowt_wrong", transport=api._backend._transport, retries=0)
    with pytest.raises(Unauthorized):
        anonymous.sows.list()
    assert issubclass(Forbidden, sowctl.SowctlError)


def test_importing_sowctl_stays_light_and_the_cli_never_loads_pytest() -> None:
    code = (
        "import sys, sowctl, sowctl.cli\n"
        "from sowctl.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('pytest', 'httpx', 'sowctl.testing', 'sowctl.backends.client')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_credentials_are_checked_as_the_cli_checks_them(api: Client) -> None:
    """A token with a control or non-ASCII character is refused without showing it; the
    trailing CR of a CRLF secrets file is dropped, so the client works."""
    from sowctl.foundation.errors import UsageError

    for bad in ("sowt_\u00fc", "sowt_a\nb", "sowt_\x07"):
        with pytest.raises(UsageError) as refused:
            Client("http://double.test", token=bad, transport=api._backend._transport)
        assert "--token" in refused.value.message and bad not in refused.value.message
    with pytest.raises(UsageError, match="--server"):
        Client("ftp://double.test", token="sowt_x")
    token = api._backend.settings.token
    crlf = Client("http://double.test", token=token + "\r", transport=api._backend._transport)
    assert isinstance(crlf.sows.list(), list)
