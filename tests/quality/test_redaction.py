"""The one set of rules that hides secrets in the access log and the test double's records."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from sowctl.foundation.redaction import (
    SECRET_PREFIXES,
    is_secret_field,
    is_secret_header,
    mask_body,
    mask_text,
    redact,
    redact_target,
    redact_value,
)
from sowctl.server.testdouble.recorder import Recorder, check_writable


@pytest.mark.parametrize("name", ["token", "api_key", "X-API-Key", "password", "refresh_token", "csrfToken"])
def test_secret_names(name: str) -> None:
    assert is_secret_field(name)


@pytest.mark.parametrize(
    "name",
    [
        "secretKey",
        "privateKey",
        "private_key",
        "accessKey",
        "passphrase",
        "credentials",
        "pwd",
        "pass",
        "sig",
        "X-Private-Key",
        "X-Passwd",
        "X-Auth",
        "X-Credentials",
        "X-Session-Id",
        "Cookie2",
        "X-Signature",
    ],
)
def test_names_that_only_contain_or_end_with_a_secret_word(name: str) -> None:
    assert is_secret_field(name) and is_secret_header(name)


@pytest.mark.parametrize(
    "name",
    ["sowId", "project_id", "title", "limit", "keywords", "author", "passengers", "x-request-id", "notes"],
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_field(name)


def test_a_body_hides_every_such_field_at_any_depth() -> None:
    body = {"title": "X", "secretKey": "B1", "privateKey": "B2", "credentials": {"pass": "B3"}, "pwd": "B4"}
    assert redact_value(body) == {
        "title": "X",
        "secretKey": "***",
        "privateKey": "***",
        "credentials": "***",
        "pwd": "***",
    }
    target = redact_target("/projects", "secretKey=A7&private_key=A3&accessKey=A2&pwd=Q&sig=S&limit=5")
    assert target == "/projects?secretKey=***&private_key=***&accessKey=***&pwd=***&sig=***&limit=5"


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
    body = {"title": "t", "token": "plain", "sowt_abc": {"password": 1}, "notes": ["see sowk_zz9"]}
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


def test_a_traceback_in_the_server_log_hides_a_token_it_quotes(tmp_path: Path, monkeypatch) -> None:
    """Before: a 500's traceback went to the log as it was, a token in its message included."""
    from sowctl.server.dispatcher import Dispatcher
    from tests.support.doubles import SOW, bearer, in_process, load

    client = in_process(str(tmp_path / "t.db"))
    auth = bearer(load(client)["token"])
    secret = "sowt_" + "Tr4ceback" * 4

    def fail(self, op, request):
        raise RuntimeError(f"lookup failed for {secret} and sowk_{secret[5:]}")

    monkeypatch.setattr(Dispatcher, "_run", fail)
    assert client.get(f"/api/sow/{SOW}/items", headers=auth).status_code == 500
    log = client.errors.getvalue()
    assert "RuntimeError: lookup failed for sowt_*** and sowk_***" in log, log
    assert secret[5:] not in log
    client.close()


def test_the_diagnostic_log_without_a_wsgi_stream_is_redacted_too(capsys) -> None:
    from sowctl.server.responses import log

    log({"REQUEST_METHOD": "GET", "PATH_INFO": "/x"}, "refused sowk_MESSAGESECRET")
    err = capsys.readouterr().err
    assert "MESSAGESECRET" not in err and "refused sowk_***" in err


@pytest.mark.parametrize("existing", [False, True])
def test_record_files_are_readable_by_their_owner_only(tmp_path: Path, existing: bool) -> None:
    path = tmp_path / "record.jsonl"
    if existing:
        path.write_text("")
        path.chmod(0o644)
    check_writable(str(path))
    Recorder(str(path)).append({"x": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_percent_encoded_secret_in_a_path_is_a_secret_too() -> None:
    """The worker's own refusals (408/413/414/431) log the raw request line."""
    assert redact_target("/api/items/sowt%5FSECRET", "") == "/api/items/sowt_***"
    assert redact_target("/api/items/sow%74_SECRET", "") == "/api/items/sowt_***"
    assert redact_target("/api/items/a%20b", "") == "/api/items/a%20b"  # nothing secret: as sent


def test_the_engines_refusal_line_hides_secrets_in_method_path_and_query(capsys) -> None:
    from sowctl.server.access_log import log_refusal

    target = "/api/items/sowt%5FSECRET1?sowk_SECRET2=1&token=SECRET3"
    log_refusal("127.0.0.1", "GET", target, "HTTP/1.1", 431)
    log_refusal("127.0.0.1", "sowt_SECRET4", "/x", "HTTP/1.1", 405)
    line = capsys.readouterr().err
    assert "SECRET" not in line and '"GET /api/items/sowt_***?***=1&token=*** HTTP/1.1" 431' in line
    assert '"sowt_*** /x HTTP/1.1" 405' in line


def test_the_request_log_headers_hide_secrets_in_urls(tmp_path: Path) -> None:
    """Before: ``Referer: https://app/?token=...`` was stored in the request log's headers
    (``/_admin/requests``, the web console's request view, ``/_admin/requests/verify``)."""
    from tests.support.doubles import ADMIN, bearer, in_process, load

    client = in_process(str(tmp_path / "log.db"))
    auth = bearer(load(client)["token"])
    referer = "https://app.example/page?token=PLAINSECRET&password=HUNTER2&x=sowt_SECRETTOKEN#top"
    assert client.get(
        "/api/sows", headers={**auth, "Referer": referer, "X-Note": "sowa_ADMINSECRET"}
    ).is_success
    logged = client.get("/_admin/requests", headers=ADMIN)
    assert logged.status_code == 200
    for secret in ("PLAINSECRET", "HUNTER2", "SECRETTOKEN", "ADMINSECRET"):
        assert secret not in logged.text
    entry = next(e for e in logged.json() if e["path"] == "/api/sows")
    assert entry["headers"]["referer"] == "https://app.example/page?token=***&password=***&x=***#top"
    client.close()


@pytest.mark.slow  # a real server
def test_a_refused_request_logs_no_secret_on_a_real_server(tmp_path: Path) -> None:
    import socket

    import httpx

    from tests.support.server import Server

    server = Server(tmp_path / "refused.db", quiet=False)
    try:
        url = httpx.URL(server.url)
        with socket.create_connection((url.host, url.port), timeout=20) as sock:
            # Headers over the 16 KiB limit: 431 from the worker's loop, before the app.
            sock.sendall(
                b"GET /api/items/sowt%5FPATHSECRET?password=QUERYSECRET HTTP/1.1\r\nHost: x\r\n"
                + b"X-Pad: "
                + b"a" * 20_000
                + b"\r\n\r\n"
            )
            assert sock.recv(100).startswith(b"HTTP/1.1 431")
        assert server.wait_for_stderr('" 431 ', timeout=20)
    finally:
        server.stop()
    log = "\n".join(server.stderr_lines)
    assert "PATHSECRET" not in log and "QUERYSECRET" not in log
    assert "/api/items/sowt_***?password=***" in log


# --- one rule for every body shape: mask_body / mask_text -------------------------------------

SECRET = "Zq9Xw7KpL3vRt"
S = SECRET
FULLWIDTH_PASSWORD = "".join(chr(ord(c) + 0xFEE0) for c in "password")
MULTIPART = (
    '--b1\r\nContent-Disposition: form-data; name="title"\r\n\r\nWalls\r\n'
    f'--b1\r\nContent-Disposition: form-data; name="passWord"\r\nContent-Type: text/plain\r\n\r\n{S}\r\n'
    "--b1--\r\n"
)
# (what, body, content type): the secret must not show, whole or in part, in any prefix either
SECRET_BODIES = [
    ("valid JSON", json.dumps({"title": "t", "password": S}), "application/json"),
    ("valid JSON, deep", json.dumps({"a": [{"b": {"passphrase": S}}]}), "application/json"),
    ("valid JSON, JSON in a string", json.dumps({"d": json.dumps({"password": S})}), "application/json"),
    ("valid JSON, form in a string", json.dumps({"d": f"a=1&cookie={S}"}), "application/json"),
    ("valid JSON, escaped key", f'{{"pass\\u0077ord": "{S}"}}', "application/json"),
    ("valid JSON, duplicate keys", f'{{"password": "x", "password": "{S}"}}', "application/json"),
    ("syntax error", f'{{"title": "t", "password": "{S}",}}', "application/json"),
    ("syntax error, unquoted value", f'{{"password": {S}, "x": 1', "application/json"),
    ("syntax error, object value", f'{{"credentials": {{"user": "u", "pw": "{S}"}}, x}}', None),
    ("syntax error, escaped quotes", f'{{"password": "a\\"{S}\\"b", x}}', None),
    ("syntax error, escaped key", f'{{"pass\\u0077ord": "{S}",}}', None),
    ("syntax error, JSON in a string", f'{{"d": "{{\\"password\\": \\"{S}\\"}}",}}', None),
    (
        "syntax error, twice nested",
        f'{{"d": "{{\\"e\\": \\"{{\\\\\\"token\\\\\\": \\\\\\"{S}\\\\\\"}}\\"}}",}}',
        None,
    ),
    ("single quotes", f"{{'password': '{S}'}}", None),
    ("case", f'{{"PassWord": "{S}",}}', None),
    ("separators", f"pass_word={S}\npass-word: {S}\nPASS WORD = {S}", "text/plain"),
    ("whitespace", f'{{ "password"\n  :\n  "{S}" ,}}', None),
    ("fullwidth letters", f'{{"{FULLWIDTH_PASSWORD}": "{S}",}}', None),
    ("form", f"title=t&password={S}", "application/x-www-form-urlencoded"),
    ("form, percent-encoded name", f"pass%77ord={S}&x=1", "application/x-www-form-urlencoded"),
    ("form, + for a space", f"pass+word={S}", "application/x-www-form-urlencoded"),
    ("form, a form in a value", f"d=x%26password%253D{S}", "application/x-www-form-urlencoded"),
    ("multipart", MULTIPART, "multipart/form-data; boundary=b1"),
    ("multipart, no content type", MULTIPART, None),
    ("text", f"cookie: {S}", "text/plain"),
    ("header lines", f"Host: x\r\nAuthorization: Basic {S}\r\n", "text/plain"),
    ("XML", f"<login><user>u</user><password>{S}</password></login>", "application/xml"),
    ("HTML entities", f"d=&quot;password&quot;: &quot;{S}&quot;", "text/html"),
    ("YAML block", f"user: u\npassword: |\n  {S}\n  {S}\nnext: 1", "application/yaml"),
    ("TOML multi-line string", f'user = "u"\npassword = """\n{S}"""', "application/toml"),
    ("other secret names", f"db_pwd={S}\nuserPass: {S}\nsid: {S}\ntotp: {S}", "text/plain"),
    ("XML attribute", f'<login user="u" password="{S}"/>', "application/xml"),
    ("a URL's password", f"see postgresql://app:{S}@db:5432/x?sslmode=require", "text/plain"),
    ("a sowctl token", f"see sowt_{S}", "text/plain"),
    ("a sowctl key, escaped", f'{{"x": "sow\\u006b_{S}",}}', None),
    ("a sowctl key, percent-encoded", f"x sowk%5F{S}", None),
]


@pytest.mark.parametrize(
    ("body", "content_type"), [c[1:] for c in SECRET_BODIES], ids=[c[0] for c in SECRET_BODIES]
)
def test_a_secret_never_shows_whatever_the_body_shape_or_where_it_is_cut(body: str, content_type) -> None:
    raw = body.encode()
    assert SECRET not in mask_body(raw, content_type)
    for cut in range(len(raw)):  # the request log keeps a body's first bytes
        shown = mask_body(raw[:cut], content_type, truncated=True)
        assert SECRET[:3] not in shown, (raw[:cut], shown)


@pytest.mark.parametrize("charset", ["utf-16", "utf-16-le", "utf-32", "latin-1"])
def test_a_body_in_another_charset_is_read_in_it(charset: str) -> None:
    raw = f'{{"title": "é", "password": "{S}"}}'.encode(charset)
    shown = mask_body(raw, f"application/json; charset={charset}")
    assert shown == '{"title":"é","password":"***"}'


@pytest.mark.parametrize(
    "raw", [b"\x80\x81" + f"password={S}".encode(), f"password={S}".encode("utf-16-le"), b"\x00\x01\x02"]
)
def test_bytes_that_are_not_text_give_a_placeholder(raw: bytes) -> None:
    assert mask_body(raw, "application/octet-stream") == f"<{len(raw)} bytes, not text>"


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ('{"password": "x", "a": 1}', '{"password":"***","a":1}'),  # valid JSON: compact, "***"
        ('{"a": 1, "password": "x",}', '{"a": 1, "password": "***",}'),  # otherwise as it was sent
        ('{"password": "x\\"y", "pin": 1234, "a": 2,', '{"password": "***", "pin": ***, "a": 2,'),
        ('{"a": 1, "token": {"b": [1, "}"]}, "c": 2,', '{"a": 1, "token": ***, "c": 2,'),
        ('{"password": "cut sho', '{"password": "***'),
        ("title=x&password=y&pass%77ord=z&flag", "title=x&password=***&pass%77ord=***&flag"),
        ("Cookie: a=b; c=d\nAccept: */*", "Cookie: ***\nAccept: */*"),
        ("<a><token>x</token><b>y</b></a>", "<a><token>***</token><b>y</b></a>"),
        ("no connection to postgresql://app:pw@db/x", "no connection to postgresql://app:***@db/x"),
        ("--b\r\nContent-Disposition: form-data; name=pin\r\n\r\n1234\r\n--b--", None),
    ],
)
def test_what_is_masked_and_what_is_kept(body: str, shown: str | None) -> None:
    masked = mask_body(body.encode())
    if shown is None:  # multipart: only the secret part's content goes
        assert masked == "--b\r\nContent-Disposition: form-data; name=pin\r\n\r\n***\r\n--b--"
    else:
        assert masked == shown
    assert mask_text(masked) == masked  # masking what is masked changes nothing


@pytest.mark.parametrize(
    "text",
    [
        '{"title":"Walls","sowId":"SOW-1","dueDate":"2026-01-01T00:00:00Z","isPinned":true}',
        "Phase 1: walls and floors",
        "limit=5&offset=10&keywords=a&passengers=3",
        "author: Bob, design: ok, shipping: now",
        "https://example.com/a?b=c#d",
        "http://127.0.0.1:8000/api and postgresql://app@db:5432/x",
        '  File "/app/x.py", line 3, in <module>',
        "[sowctl] GET /api/items/x request-id=abc: injected fault: HTTP 503",
    ],
)
def test_text_without_secrets_is_kept_as_it_is(text: str) -> None:
    assert mask_text(text) == text
    assert mask_body(text.encode()) == text


def test_error_messages_repeat_values_masked() -> None:
    from sowctl.foundation.errors import quoted

    assert quoted(f"password={S}") == "'password=***'"
    assert quoted(f"sowt_{S}") == "'sowt_***'"
    assert quoted("Walls") == "'Walls'" and quoted(5) == "5"
