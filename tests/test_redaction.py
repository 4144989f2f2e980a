"""The one set of rules that hides secrets in the access log and the test double's records."""

from __future__ import annotations

import pytest

from sowctl.redaction import is_secret_field, redact, redact_target


@pytest.mark.parametrize("name", ["token", "api_key", "X-API-Key", "password", "refresh_token", "csrfToken"])
def test_secret_names(name: str) -> None:
    assert is_secret_field(name)


@pytest.mark.parametrize("name", ["sowId", "project_id", "title", "limit", "keywords"])
def test_ordinary_names(name: str) -> None:
    assert not is_secret_field(name)


def test_tokens_and_keys_are_cut_to_their_prefix_wherever_they_appear() -> None:
    assert redact("/api/items/sowt_abcDEF-123_x") == "/api/items/sowt_***"
    assert redact("key sowk_Zz9 and text") == "key sowk_*** and text"
    assert redact("sowtx_not_a_secret") == "sowtx_not_a_secret"


def test_request_targets_hide_secret_parameters_and_token_shaped_values() -> None:
    target = redact_target("/p/sowt_abc", "token=abc&limit=5&q=sowk_xyz&api%5Fkey=s3&flag")
    assert target == "/p/sowt_***?token=***&limit=5&q=***&api%5Fkey=***&flag"
    assert redact_target("/healthz", "") == "/healthz"
