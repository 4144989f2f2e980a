"""Shell completion (bash, zsh, fish): commands, options, enum values and SOW ids, through
the protocol the scripts of ``sowctl --show-completion`` use (``_SOWCTL_COMPLETE``)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest


def complete(monkeypatch, words: str, shell: str = "bash", *globals_: str) -> list[str]:
    from sowctl.cli import main

    line = " ".join(["sowctl", *globals_, words])
    parts = line.split(" ")
    monkeypatch.setenv("_SOWCTL_COMPLETE", f"complete_{shell}")
    monkeypatch.setenv("COMP_WORDS", line)
    monkeypatch.setenv("COMP_CWORD", str(len(parts) - 1))
    monkeypatch.setenv("_TYPER_COMPLETE_ARGS", line)
    monkeypatch.setenv("_TYPER_COMPLETE_FISH_ACTION", "get-args")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 0, err.getvalue()
    assert err.getvalue() == ""
    return out.getvalue().split()


def test_commands_and_options(cli, monkeypatch):
    assert complete(monkeypatch, "ite") == ["items"]
    assert complete(monkeypatch, "items re") == ["reorder"]
    assert complete(monkeypatch, "deps create --ri") == ["--risk"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_enum_values(cli, monkeypatch, shell):
    found = complete(monkeypatch, "deps create --type ", shell)
    for value in ("depends_on", "blocks", "related_to", "prerequisite", "successor"):
        assert any(value in candidate for candidate in found), (shell, found)


def test_sow_ids_in_local_mode(cli, db, monkeypatch):
    assert cli("sows", "create", "A", "--id", "sow-a").exit_code == 0
    assert cli("sows", "create", "B", "--id", "other").exit_code == 0
    assert complete(monkeypatch, "items list sow") == ["sow-a"]
    assert sorted(complete(monkeypatch, "chain check ")) == ["other", "sow-a"]


def test_sow_ids_in_remote_mode(modes, monkeypatch):
    remote = ("--server", "http://sowctl.test", "--token", modes.token)
    monkeypatch.delenv("SOWCTL_DB")
    assert complete(monkeypatch, "items tree ", "bash", *remote) == ["sow-1"]
    assert (
        complete(monkeypatch, "items tree ", "bash", "--server", "http://sowctl.test", "--token", "bad") == []
    )


def test_sow_ids_past_the_first_page_in_both_modes(modes, monkeypatch):
    """GET /api/sows answers 20 SOWs unless asked for more: completion offers every one."""
    from sowctl.backends import remote
    from sowctl.schemas.sows import SowCreate
    from sowctl.services.access import Caller
    from sowctl.services.sows import create_sow

    for index in range(24):
        create_sow(Caller.local(), SowCreate(title="T", id=f"sow-x{index:02}"))
    monkeypatch.setattr(remote, "PAGE_SIZE", 10)
    expected = ["sow-1", *(f"sow-x{index:02}" for index in range(24))]
    assert sorted(complete(monkeypatch, "items tree ")) == expected
    monkeypatch.delenv("SOWCTL_DB")
    remote_mode = ("--server", "http://sowctl.test", "--token", modes.token)
    assert sorted(complete(monkeypatch, "items tree ", "bash", *remote_mode)) == expected


def test_a_missing_database_offers_nothing_and_stays_missing(cli, tmp_path, monkeypatch):
    missing = tmp_path / "none.db"
    assert complete(monkeypatch, "items tree ", "bash", "--db", str(missing)) == []
    assert not missing.exists()


def test_an_unreachable_server_offers_nothing_after_one_try(cli, monkeypatch):
    """The shell waits: one connection attempt, no retries with backoff."""
    import httpx

    attempts = []

    def refuse(self, request):
        attempts.append(request.url.path)
        raise httpx.ConnectError("connection refused", request=request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", refuse)
    assert (
        complete(monkeypatch, "items tree ", "bash", "--server", "http://127.0.0.1:9", "--token", "t") == []
    )
    assert attempts == ["/api/sows"]
