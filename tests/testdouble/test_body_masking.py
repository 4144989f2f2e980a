"""A secret sent in a request body never shows, whatever the body's shape: not in the
request log (``/_admin/requests``, which the web console shows and ``verify`` reads), the
record file, the server's log, or an error answer.

Before: only a valid JSON body was masked; a form, multipart, text, JSON with a syntax
error or a body cut at the size limit was logged as it was sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from sowctl.server.configuration import ServerSettings
from tests.support.client import app_client
from tests.support.doubles import ADMIN, ADMIN_TOKEN, SOW, bearer, in_process, load

SECRET = "Zq9Xw7KpL3vRt"
ITEMS = f"/api/sow/{SOW}/items"
MULTIPART = (
    '--XyZ\r\nContent-Disposition: form-data; name="title"\r\n\r\nWalls\r\n'
    f'--XyZ\r\nContent-Disposition: form-data; name="password"\r\n\r\n{SECRET}\r\n--XyZ--\r\n'
)
# (content type, body): every shape a client may send a secret in
BODIES = [
    ("application/json", json.dumps({"title": "Walls", "type": "task_item", "password": SECRET})),
    ("application/json", f'{{"title": "Walls", "passphrase": "{SECRET}",}}'),
    ("application/json", f'{{"PassWord": "{SECRET}", "pass_word": "{SECRET}", "x": }}'),
    ("application/json", f'{{"pass\\u0077ord": "{SECRET}", "nested": {{"cookie": "a\\"{SECRET}"}} ,}}'),
    ("application/json", f'{{"data": "{{\\"password\\": \\"{SECRET}\\"}}", ]'),
    ("application/x-www-form-urlencoded", f"title=Walls&password={SECRET}"),
    ("application/x-www-form-urlencoded", f"pass%77ord={SECRET}&Pass+Word={SECRET}"),
    ("multipart/form-data; boundary=XyZ", MULTIPART),
    ("text/plain", f"user: bob\ncookie: {SECRET}; other={SECRET}\n"),
    ("application/xml", f"<login><password>{SECRET}</password></login>"),
    ("text/plain; charset=utf-16", f"password={SECRET}"),
]


def _no_secret(text: str) -> None:
    assert SECRET not in text and SECRET[:4] not in text, text


@pytest.fixture
def double(migrated_db_url: str, tmp_path: Path) -> tuple[httpx.Client, dict[str, str], Path]:
    record = tmp_path / "record.jsonl"
    client = in_process(migrated_db_url, record_path=str(record), max_body_bytes=4096)
    return client, bearer(load(client)["token"]), record


def test_no_body_shape_shows_a_secret_in_the_log_the_record_or_an_answer(double) -> None:
    client, auth, record = double
    answers = []
    for content_type, body in BODIES:
        encoding = "utf-16" if "utf-16" in content_type else "utf-8"
        sent = client.post(
            ITEMS, content=body.encode(encoding), headers={**auth, "Content-Type": content_type}
        )
        answers.append(sent.text)
    assert json.loads(answers[0])["title"] == "Walls"  # the valid one was created (and recorded)
    assert all(json.loads(answer).get("error") for answer in answers[1:])  # the others refused

    logged = client.get("/_admin/requests", headers=ADMIN)
    assert logged.status_code == 200
    bodies = [entry["requestBody"] for entry in logged.json() if entry["path"] == ITEMS]
    assert len(bodies) == len(BODIES)
    # Valid JSON keeps its shape, the field's value "***"; every other shape is masked as text.
    assert bodies[0] == {"title": "Walls", "type": "task_item", "password": "***"}
    assert bodies[5] == "title=Walls&password=***"
    assert "<password>***</password>" in bodies[9]
    for text in (logged.text, record.read_text(), client.errors.getvalue(), *answers):
        _no_secret(text)
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["body"].get("password") for line in recorded if line["path"] == ITEMS] == ["***"]
    client.close()


@pytest.mark.parametrize("limit", [14, 15, 17, 20, 26])
def test_a_body_cut_at_the_size_limit_shows_no_part_of_the_secret(migrated_db_url: str, limit: int) -> None:
    """The log keeps the bytes read before a 413 (of a chunked body: one with a longer
    Content-Length is refused unread), and the limit cuts inside the secret."""
    auth = bearer(load(in_process(migrated_db_url))["token"])
    settings = ServerSettings(admin_token=ADMIN_TOKEN, max_body_bytes=limit)
    client = app_client(migrated_db_url, settings)
    bodies = [
        (f'{{"password": "{SECRET * 5}"}}', "application/json"),
        (f"password={SECRET * 5}&title=x", "application/x-www-form-urlencoded"),
        (f'{{"a":1,"token":{{"u": "{SECRET * 5}"}}}}', "application/json"),
        (f"--B\r\nContent-Disposition: form-data; name=pin\r\n\r\n{SECRET * 5}", "multipart/form-data"),
    ]
    for body, content_type in bodies:
        chunked = iter([body.encode()])
        answer = client.post(ITEMS, content=chunked, headers={**auth, "Content-Type": content_type})
        assert answer.status_code == 413
        _no_secret(answer.text)
    logged = client.get("/_admin/requests", headers=ADMIN)
    entries = [e for e in logged.json() if e["path"] == ITEMS]
    assert [e["requestBodyTruncated"] for e in entries] == [False] * len(bodies)  # short: kept whole
    # Cut inside the secret: the whole rest is masked, not one character of it is left.
    assert [e["requestBody"] for e in entries[:2]] == ['{"password": "***', "password=***"]
    _no_secret(logged.text)
    client.close()


def test_the_servers_log_masks_a_body_an_error_quotes(migrated_db_url: str, monkeypatch) -> None:
    """A traceback quoting what was sent is masked like a body (before: only sowctl tokens)."""
    from sowctl.server.dispatcher import Dispatcher

    client = in_process(migrated_db_url)
    auth = bearer(load(client)["token"])

    def fail(self, op, request):
        raise RuntimeError(f"cannot store {{'password': '{SECRET}'}} from 'title=x&token={SECRET}'")

    monkeypatch.setattr(Dispatcher, "_run", fail)
    assert client.get(ITEMS, headers=auth).status_code == 500
    log = client.errors.getvalue()
    assert "RuntimeError: cannot store {'password': '***'} from 'title=x&token=***" in log, log
    _no_secret(log)
    client.close()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/_admin/clock", {"now": f"password={SECRET}"}),
        ("POST", "/_admin/clock", {"now": f"sowt_{SECRET}"}),
        ("GET", f"/api/nothing/password={SECRET}", None),
        ("GET", f"/api/nothing/sowk_{SECRET}", None),
        ("PUT", "/_admin/faults", {"routes": [f"GET /x?token={SECRET} y"]}),
    ],
)
def test_an_error_answer_never_repeats_a_secret(migrated_db_url: str, method, path, body) -> None:
    """Before: "'password=…' is not a timestamp", "no route for GET /api/nothing/sowk_…"."""
    client = in_process(migrated_db_url)
    answer = client.request(method, path, json=body, headers=ADMIN)
    assert answer.status_code in (400, 404), answer.text
    assert answer.json()["error"]
    _no_secret(answer.text)
    client.close()


def test_a_verification_report_never_repeats_an_expected_secret(migrated_db_url: str) -> None:
    """The report echoes the pattern (and near misses): expected secrets show as ***."""
    client = in_process(migrated_db_url)
    auth = bearer(load(client)["token"])
    client.post(ITEMS, json={"title": "Walls", "type": "task_item", "password": SECRET}, headers=auth)
    pattern = {"path": ITEMS, "query": {"token": SECRET}, "body": {"password": SECRET, "title": "Wal"}}
    report = client.post("/_admin/requests/verify", json=pattern, headers=ADMIN)
    assert report.status_code == 409, report.text
    found = report.json()
    assert found["matched"] == 0 and found["closest"], found
    assert 'body.password: expected "***", got "***"' in found["closest"][0]["differences"]
    _no_secret(report.text)
    client.close()


@pytest.mark.slow  # a real server: gunicorn workers, the access log on stderr, --record
def test_a_served_instance_shows_no_secret_of_any_body_shape(tmp_path: Path) -> None:
    from tests.support.server import Server, demo_secrets

    record = tmp_path / "served.jsonl"
    server = Server(tmp_path / "served.db", "--demo", "--admin", "--record", str(record), quiet=False)
    try:
        token, _ = demo_secrets("\n".join(server.read_stdout_until("API key")))
        auth = bearer(token)
        answers = []
        for content_type, body in BODIES:
            encoding = "utf-16" if "utf-16" in content_type else "utf-8"
            headers = {**auth, "Content-Type": content_type}
            answers.append(server.client.post(ITEMS, content=body.encode(encoding), headers=headers).text)
        admin = {"Authorization": f"Bearer {server.admin_token}"}
        logged = server.client.get("/_admin/requests", headers=admin)
        assert logged.status_code == 200
        assert len([e for e in logged.json() if e["path"] == ITEMS]) == len(BODIES)
        assert server.wait_for_stderr(f'"POST {ITEMS} HTTP/1.1" 400', timeout=20)
    finally:
        server.stop()
    assert '"password":"***"' in record.read_text()
    for text in (logged.text, record.read_text(), "\n".join(server.stderr_lines), *answers):
        _no_secret(text)


def test_text_inside_a_json_value_is_data_and_is_recorded_as_sent(double) -> None:
    """A JSON body says by its field names which values are secrets; a title that merely reads
    like one is replayed and matched unchanged (only sowctl's own secrets are cut there)."""
    client, auth, record = double
    title = "Rotate the API key: quarterly (token: see vault)"
    created = client.post(ITEMS, json={"title": title, "type": "task_item"}, headers=auth)
    assert created.status_code == 201, created.text
    (entry,) = client.get("/_admin/requests?limit=1", headers=ADMIN).json()
    assert entry["requestBody"]["title"] == title
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert recorded[-1]["body"]["title"] == title
