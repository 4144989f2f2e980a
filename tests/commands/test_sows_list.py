"""``sowctl sows list`` prints every SOW in both modes, though ``GET /api/sows`` answers in
pages of 20 by default: remote mode fetches every page, as for the other paged lists."""

from __future__ import annotations

import json

import pytest

from sowctl.schemas.sows import SowCreate
from sowctl.services import sows as sow_service
from sowctl.services.access import Caller
from tests.support.modes import Modes


@pytest.fixture
def many(modes: Modes) -> list[str]:
    """25 SOWs in organization ``local``: the fixture's ``sow-1`` and 24 more, whose ids sort
    after it (id order breaks ties within a second, so id order is creation order)."""
    ids = ["sow-1", *(f"sow-x{index:02}" for index in range(24))]
    for sow_id in ids[1:]:
        sow_service.create_sow(Caller.local(), SowCreate(title=f"title {sow_id}", id=sow_id))
    return ids


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


@pytest.mark.parametrize("page_size", [None, 10], ids=["default pages", "pages of 10"])
def test_every_sow_is_listed_in_both_modes(modes: Modes, many: list[str], monkeypatch, page_size) -> None:
    if page_size is not None:
        from sowctl.backends import remote

        monkeypatch.setattr(remote, "PAGE_SIZE", page_size)
    for run in (modes.local, modes.remote):
        assert ok(run("sows", "list", "-q")).stdout.splitlines() == many
        listed = json.loads(ok(run("sows", "list", "--json")).stdout)
        assert [sow["id"] for sow in listed] == many
        piped = ok(run("sows", "list")).stdout.splitlines()
        assert [line.split("\t")[0] for line in piped] == many
    local, remote = (ok(run("sows", "list", "--json")).stdout for run in (modes.local, modes.remote))
    assert local == remote


def test_remote_mode_asks_for_pages_of_the_largest_size(modes: Modes, many: list[str], monkeypatch) -> None:
    """25 SOWs in one request of limit=100: the server's default of 20 would drop five."""
    import httpx

    from sowctl.backends.remote import RemoteBackend

    sent: list[httpx.URL] = []
    original = RemoteBackend.request

    def record(self, op, url, query=None, body=None, headers=None):
        response = original(self, op, url, query, body, headers)
        sent.append(response.request.url)
        return response

    monkeypatch.setattr(RemoteBackend, "request", record)
    assert ok(modes.remote("sows", "list", "-q")).stdout.splitlines() == many
    assert [(url.path, url.params.get("page"), url.params.get("limit")) for url in sent] == [
        ("/api/sows", "1", "100")
    ]


def test_the_project_filter_lists_every_page_of_its_sows(modes: Modes, many: list[str], monkeypatch) -> None:
    from sowctl.backends import remote

    monkeypatch.setattr(remote, "PAGE_SIZE", 7)
    project = json.loads(ok(modes.local("sows", "list", "--json")).stdout)[0]["projectId"]
    for run in (modes.local, modes.remote):
        assert ok(run("sows", "list", "--project", project, "-q")).stdout.splitlines() == many
