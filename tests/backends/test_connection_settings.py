"""Credentials and the server URL as the CLI takes them from options and the environment:
cleaned of a stray line end, refused by the option's name when unusable, never echoed."""

from __future__ import annotations

import pytest

from tests.support.modes import SERVER


def test_token_with_trailing_cr_from_environment_is_stripped_and_works(modes):
    modes.monkeypatch.delenv("SOWCTL_DB", raising=False)
    result = modes.cli("sows", "list", env={"SOWCTL_SERVER": SERVER, "SOWCTL_TOKEN": modes.token + "\r"})
    assert result.exit_code == 0, result.stderr
    assert "sow-1" in result.stdout


@pytest.mark.parametrize("bad", ["a\nb", "sowt_ü", "sowt_a\x07b"])
def test_token_with_inner_control_or_non_ascii_is_a_usage_error_without_the_value(modes, bad):
    result = modes.remote("sows", "list", token=bad)
    assert result.exit_code == 2, result.stderr
    assert "--token" in result.stderr and "SOWCTL_TOKEN" in result.stderr
    assert bad not in result.stderr and "sowt_" not in result.stderr
    assert "UnicodeEncodeError" not in result.stderr


def test_api_key_with_control_character_is_refused_by_name(modes):
    modes.monkeypatch.delenv("SOWCTL_DB", raising=False)
    key = "sowk_secretvalue\x01x"
    result = modes.cli(
        "--server", SERVER, "--api-key", key, "--org", "o", "--company", "c", "clients", "list"
    )
    assert result.exit_code == 2, result.stderr
    assert "--api-key" in result.stderr and "secretvalue" not in result.stderr


def test_an_unusable_token_in_the_environment_does_not_stop_local_mode(cli):
    assert cli("sows", "create", "A", "--id", "s").exit_code == 0
    result = cli("sows", "list", env={"SOWCTL_TOKEN": "sowt_\x07x"})
    assert result.exit_code == 0, result.stderr
    assert "\x07" not in result.stderr


@pytest.mark.parametrize("url", ["http://[::1", "ftp://x", "not a url", "http://"])
def test_bad_server_url_is_a_usage_error_naming_server(cli, monkeypatch, url):
    monkeypatch.delenv("SOWCTL_DB", raising=False)
    result = cli("--server", url, "--token", "sowt_x", "sows", "list")
    assert result.exit_code == 2, result.stderr
    assert "--server" in result.stderr
    assert "unexpected error" not in result.stderr
