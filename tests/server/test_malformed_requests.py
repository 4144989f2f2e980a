"""Requests gunicorn refuses before the application sees them, and headers every answer carries.

gunicorn's own answer to a request it cannot parse quoted the request (``Bad Request: Invalid
HTTP Header: 'X-Api-Key sowt_...'``) and its error log printed it, token and all. The server
now answers those in the group's envelope with a fixed message, X-Request-Id and (Group B)
X-RateLimit-*, and logs them under the one redaction rule.
"""

from __future__ import annotations

import io
import json
import logging
import signal
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.client import app_client
from tests.support.server import Server, demo_secrets
from tests.support.sockets import read_answer

FRAMING = "invalid or conflicting Content-Length or Transfer-Encoding header"


class Served:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.token, self.key = demo_secrets("\n".join(server.read_stdout_until("API key")))
        url = httpx.URL(server.url)
        self.address = (url.host, url.port)

    def send(self, request: bytes) -> tuple[str, dict[str, str], bytes]:
        with socket.create_connection(self.address, timeout=5) as sock:
            sock.sendall(request)
            return read_answer(sock)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # With the access log (quiet=False): its lines are checked for secrets too.
    server = Server(tmp_path_factory.mktemp("malformed") / "m.db", "--demo", quiet=False)
    try:
        yield Served(server)
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)


def _line(served: Served, request: str) -> bytes:
    return request.format(token=served.token, key=served.key).encode("latin-1")


# (name, request (str.format'ed with token and key), group, message)
CASES: list[tuple[str, str, str, str]] = [
    (
        "control char in target",
        "GET /a\x01{token} HTTP/1.1\r\nHost: x\r\n\r\n",
        "A",
        "malformed request line",
    ),
    (
        "header line without colon",
        "GET /api/external/budget-view HTTP/1.1\r\nHost: x\r\nX-Api-Key {key}\r\n\r\n",
        "B",
        "malformed header",
    ),
    ("token as method", "{token} /projects HTTP/1.1\r\nHost: x\r\n\r\n", "C", "invalid request method"),
    ("negative length", "POST /projects HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", "C", FRAMING),
    (
        "two lengths",
        "POST /projects HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "C",
        FRAMING,
    ),
    (
        "chunked and length",
        "POST /api/external/create-purchase-order HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "B",
        FRAMING,
    ),
    (
        "NUL in a header",
        "GET /api/sows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \x00{token}\r\n\r\n",
        "A",
        "malformed header",
    ),
    ("bad version", "GET /api/sows HTTP/9.9\r\nHost: x\r\n\r\n", "A", "unsupported HTTP version"),
]


@pytest.mark.slow  # a real server
@pytest.mark.parametrize(
    ("request_text", "group", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_requests_gunicorn_refuses_get_the_groups_envelope_and_never_echo_or_log_a_secret(
    served: Served, request_text: str, group: str, message: str
) -> None:
    before = len(served.server.stderr)
    status, headers, body = served.send(_line(served, request_text))
    assert status.startswith("HTTP/1.1 400 "), (status, body)
    answer = json.loads(body)
    if group == "C":
        assert answer == {
            "code": "BAD_REQUEST",
            "message": "invalid input data",
            "issues": [{"path": [], "message": message}],
        }
    else:
        assert answer == {"error": message}
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert len(headers["x-request-id"]) == 16
    assert headers["x-content-type-options"] == "nosniff"
    assert ("x-ratelimit-limit" in headers) == (group == "B")
    if group == "B":
        assert headers["x-ratelimit-remaining"] == headers["x-ratelimit-limit"]  # nothing charged
    raw = f"{headers}{body!r}"
    assert served.token not in raw and served.key not in raw
    assert served.token[5:20] not in raw and served.key[5:20] not in raw
    warning = "Invalid request from ip=127.0.0.1: " + message
    assert _new_lines(served, before, [warning, '" 400 0 ']), served.server.stderr[before:]
    log = "\n".join(served.server.stderr)
    assert served.token[5:20] not in log and served.key[5:20] not in log, log


def _new_lines(served: Served, before: int, wanted: list[str], timeout: float = 5.0) -> bool:
    """Whether stderr lines after the first ``before`` come to hold each of ``wanted``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = served.server.stderr[before:]
        if all(any(text in line for line in new) for text in wanted):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow  # a real server
def test_a_token_sent_as_the_method_is_redacted_in_the_access_log(served: Served) -> None:
    before = len(served.server.stderr)
    served.send(_line(served, "{token} /projects HTTP/1.1\r\n\r\n"))
    assert _new_lines(served, before, ['"sowt_*** /projects HTTP/1.1" 400']), served.server.stderr


@pytest.mark.slow  # a real server
def test_the_server_keeps_serving_after_malformed_requests(served: Served) -> None:
    for request_text, *_ in [c[1:] for c in CASES]:
        served.send(_line(served, request_text))
    status, headers, _ = served.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.startswith("HTTP/1.1 200 ") and headers["x-content-type-options"] == "nosniff"


@pytest.mark.slow  # a real server
@pytest.mark.parametrize(
    "chunks", [b"zz\r\n\r\n", b"3\r\nabcXX\r\n0\r\n\r\n"], ids=["bad size", "missing terminator"]
)
def test_a_malformed_chunked_body_is_a_400_not_a_500_with_a_traceback(served: Served, chunks: bytes) -> None:
    path = "/api/sows"
    before = len(served.server.stderr)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {served.token}\r\n"
    status, headers, body = served.send(head.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
    assert status.startswith("HTTP/1.1 400 "), (status, body)
    assert json.loads(body) == {"error": "malformed chunked body"}
    assert headers["x-content-type-options"] == "nosniff" and headers["x-request-id"]
    assert _new_lines(served, before, [f'"POST {path} HTTP/1.1" 400'])
    assert "Traceback" not in "\n".join(served.server.stderr[before:])


# --- the error log's redaction, in process ----------------------------------------------------


def test_gunicorns_error_log_cuts_secrets_in_messages_arguments_and_tracebacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gunicorn.config import Config

    from sowctl.server.error_log import RedactingLogger

    config = Config()
    config.set("errorlog", "-")
    logger = RedactingLogger(config)
    secret = "sowt_" + "A1b2C3d4" * 5
    logger.warning("Invalid request: %s", f"GET /a\x01{secret} HTTP/1.1")
    logger.error(f"quoted: 'X-Api-Key sowk_{secret[5:]}' and sowt%5F{secret[5:]}")
    try:
        raise ValueError(f"boom {secret}")
    except ValueError:
        logger.exception("Error handling request %s", f"/api/{secret}")
    logger.setup(config)  # a reload sets the logger up again: still one filter, still redacting
    logger.warning("again %s", secret)
    err = capsys.readouterr().err
    assert secret[5:] not in err, err
    assert err.count("sowt_***") >= 4 and "sowk_***" in err and "ValueError: boom sowt_***" in err
    assert len(logger.error_log.filters) == 1


def test_the_redacting_filter_leaves_other_loggers_and_plain_lines_alone() -> None:
    from sowctl.server.error_log import RedactFilter

    record = logging.LogRecord("gunicorn.error", logging.INFO, __file__, 1, "plain %s", ("text",), None)
    assert RedactFilter().filter(record) and record.getMessage() == "plain text"
    stream = io.StringIO()
    other = logging.getLogger("some.other")
    handler = logging.StreamHandler(stream)
    other.addHandler(handler)
    try:
        other.warning("untouched")
    finally:
        other.removeHandler(handler)
    assert stream.getvalue() == "untouched\n"


# --- nosniff on every answer, in process ------------------------------------------------------


@pytest.fixture
def client(tmp_path) -> Iterator[httpx.Client]:
    with app_client(str(tmp_path / "n.db")) as client:
        yield client


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/x<script>alert(1)</script>", 404),  # the path is quoted in the JSON body
        ("GET", "/healthz", 200),
        ("GET", "/api/sows", 401),
        ("DELETE", "/healthz", 405),
        ("GET", "/projects/<script>", 404),
        ("GET", "/openapi.json", 200),
    ],
)
def test_every_api_answer_says_nosniff(client: httpx.Client, method: str, path: str, status: int) -> None:
    response = client.request(method, path)
    assert response.status_code == status, response.text
    assert response.headers.get_list("x-content-type-options") == ["nosniff"]


def test_the_test_doubles_injected_faults_say_nosniff_too(tmp_path) -> None:
    from tests.support.doubles import ADMIN, in_process

    client = in_process(str(tmp_path / "f.db"))
    fault = {"rate": 1.0, "status": 503, "latencyMs": 1}
    assert client.put("/_admin/faults", json=fault, headers=ADMIN).status_code == 200
    response = client.get("/api/sows")
    assert response.status_code == 503 and response.headers["x-sowctl-fault"] == "error", response.text
    assert response.headers.get_list("x-content-type-options") == ["nosniff"]
    client.close()
