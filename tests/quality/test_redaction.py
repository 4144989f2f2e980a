"""The one set of rules that hides secrets in the access log and the test double's records."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest

from sowctl.redaction import SECRET_PREFIXES, is_secret_field, redact, redact_target, redact_value
from sowctl.testdouble.recorder import Recorder, check_writable


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


def test_admin_tokens_are_secrets_too() -> None:
    assert redact("/_admin/x?sowa_abc123") == "/_admin/x?sowa_***"


def test_a_secret_used_as_a_query_parameter_name_is_hidden() -> None:
    assert redact_target("/api/projects", "sowt_abc=1&limit=5") == "/api/projects?***=1&limit=5"
    assert redact_target("/api/projects", "sowk_abc") == "/api/projects?***"


def test_json_values_hide_secret_fields_keys_and_values_at_any_depth() -> None:
    body = {"title": "t", "token": "plain", "sowt_key": {"password": 1}, "notes": ["see sowk_zz9"]}
    assert redact_value(body) == {
        "title": "t",
        "token": "***",
        "sowt_***": {"password": "***"},
        "notes": ["see sowk_***"],
    }


def test_every_prefix_sowctl_issues_is_recognised() -> None:
    from sowctl.services import credentials

    assert {credentials.TOKEN_PREFIX, credentials.KEY_PREFIX} <= set(SECRET_PREFIXES)


def test_the_diagnostic_log_line_hides_a_token_in_the_path() -> None:
    """Before: faults, 500s and 503s logged ``[sowctl] GET /api/items/sowt_… request-id``."""
    from sowctl.server.responses import log

    stream = io.StringIO()
    log({"REQUEST_METHOD": "GET", "PATH_INFO": "/api/items/sowt_SECRET", "wsgi.errors": stream}, "fault")
    assert stream.getvalue().startswith("[sowctl] GET /api/items/sowt_*** request-id=")
    assert "SECRET" not in stream.getvalue()


@pytest.mark.parametrize("existing", [False, True])
def test_record_files_are_readable_by_their_owner_only(tmp_path: Path, existing: bool) -> None:
    path = tmp_path / "record.jsonl"
    if existing:
        path.write_text("")
        path.chmod(0o644)
    check_writable(str(path))
    Recorder(str(path)).append({"x": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
