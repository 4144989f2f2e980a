"""Requests the parser refuses before the application sees them, requests framed two ways,
and headers every answer carries.

The server used to frame requests with a hand-written reader in front of gunicorn's parser,
and the two disagreed: chunk sizes such as ``0x1a``, ``+1a`` or `` 1a `` passed the reader and
were refused by gunicorn with the connection kept open, so the bytes after where the reader
thought a body ended ran as the next request (nine SOWs were created that way). Now one parser
(hyper's, through granian) frames every request: what it cannot read is answered 400 and the
connection is closed, so nothing glued after a malformed request ever runs.
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

from sowctl.services import demo_data
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

    def send(self, request: bytes) -> tuple[str, dict[str, str], bytes, bool]:
        """The first answer to ``request`` and whether the server closed the connection after it."""
        with socket.create_connection(self.address, timeout=5) as sock:
            sock.sendall(request)
            status, headers, body = read_answer(sock)
            sock.settimeout(2)
            try:
                rest = sock.recv(65536)
                closed = rest == b""
            except TimeoutError:
                rest, closed = b"", False
            except OSError:
                rest, closed = b"", True
            assert not rest, f"a second answer came: {rest[:200]!r}"
            return status, headers, body, closed

    def sow_titles(self) -> list[str]:
        answer = httpx.get(
            f"{self.server.url}/api/sows?limit=100",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return [sow["title"] for sow in answer.json()]


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


# Requests the parser cannot read: (name, request, str.format'ed with the token and the key).
UNREADABLE: list[tuple[str, str]] = [
    ("control char in target", "GET /a\x01{token} HTTP/1.1\r\nHost: x\r\n\r\n"),
    (
        "header line without colon",
        "GET /api/external/budget-view HTTP/1.1\r\nHost: x\r\nX-Api-Key {key}\r\n\r\n",
    ),
    ("negative length", "POST /projects HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"),
    ("two lengths", "POST /projects HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
    ("NUL in a header", "GET /api/sows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \x00{token}\r\n\r\n"),
    ("bad version", "GET /api/sows HTTP/9.9\r\nHost: x\r\n\r\n"),
    ("folded header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Api-Key: a\r\n  {key}\r\n\r\n"),
    ("space before colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer {token}\r\n\r\n"),
    ("chunked on HTTP/1.0", "POST /api/sows HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
]


@pytest.mark.slow  # a real server
@pytest.mark.parametrize("request_text", [c[1] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE])
def test_requests_the_parser_cannot_read_get_400_close_and_never_echo_or_log_a_secret(
    served: Served, request_text: str
) -> None:
    status, headers, body, closed = served.send(_line(served, request_text))
    assert status.startswith("HTTP/1.1 400 "), (status, body)
    assert headers["connection"] == "close" and closed
    raw = f"{headers}{body!r}"
    assert served.token[5:20] not in raw and served.key[5:20] not in raw
    log = "\n".join(served.server.stderr)
    assert served.token[5:20] not in log and served.key[5:20] not in log, log


# A body framed two ways, or in a coding besides chunked: refused by the engine, in the group's
# envelope, and the connection closed (what follows it is never read as a request).
TWO_WAYS: list[tuple[str, str, str, str]] = [
    (
        "chunked twice",
        "POST /projects HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "C",
        "unsupported transfer coding (only chunked is)",
    ),
    (
        "gzip then chunked",
        "POST /api/sows HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        "A",
        "unsupported transfer coding (only chunked is)",
    ),
]


@pytest.mark.slow  # a real server
@pytest.mark.parametrize(
    ("request_text", "group", "message"), [c[1:] for c in TWO_WAYS], ids=[c[0] for c in TWO_WAYS]
)
def test_a_body_framed_two_ways_is_refused_in_the_groups_envelope(
    served: Served, request_text: str, group: str, message: str
) -> None:
    before = len(served.server.stderr)
    status, headers, body, closed = served.send(_line(served, request_text))
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
    assert headers["content-type"] == "application/json" and headers["connection"] == "close" and closed
    assert len(headers["x-request-id"]) == 16
    assert headers["x-content-type-options"] == "nosniff"
    assert ("x-ratelimit-limit" in headers) == (group == "B")
    if group == "B":
        assert headers["x-ratelimit-remaining"] == headers["x-ratelimit-limit"]  # nothing charged
    assert _new_lines(served, before, ['" 400 0 ']), served.server.stderr[before:]


# Chunked bodies the old reader and the parser behind it disagreed on; each is followed by a
# whole request in the same packet, which must never run.
SMUGGLING = {
    # Both lengths: the parser reads the body as chunked (as RFC 9112 says) and closes the
    # connection after the answer, so bytes a proxy reading Content-Length would frame
    # otherwise are never read as a request.
    "chunked and a length": b"0\r\n\r\n",
    "0x prefix": b"0x1a\r\n" + b"a" * 26 + b"\r\n0\r\n\r\n",
    "plus sign": b"+1a\r\n" + b"a" * 26 + b"\r\n0\r\n\r\n",
    "underscore": b"0_1a\r\n" + b"a" * 26 + b"\r\n0\r\n\r\n",
    "spaces around": b" 1a \r\n" + b"a" * 26 + b"\r\n0\r\n\r\n",
    "vertical tab": b"\x0b1a\r\n" + b"a" * 26 + b"\r\n0\r\n\r\n",
    "bare LF after the size": b"1a\n" + b"a" * 26 + b"\r\n0\r\n\r\n",
    "junk instead of CRLF": b"1a\r\n" + b"a" * 26 + b"XY0\r\n\r\n",
    "last chunk -0": b"1a\r\n" + b"a" * 26 + b"\r\n-0\r\n\r\n",
    "last chunk with bare LFs": b"1a\r\n" + b"a" * 26 + b"\r\n0\n\n",
    "bad size": b"zz\r\n\r\n",
    "missing terminator": b"3\r\nabcXX\r\n0\r\n\r\n",
}


@pytest.mark.slow  # a real server
@pytest.mark.parametrize("chunks", list(SMUGGLING.values()), ids=list(SMUGGLING))
def test_a_malformed_chunked_body_is_refused_and_nothing_glued_after_it_runs(
    served: Served, chunks: bytes
) -> None:
    title = f"smuggled {chunks!r}"
    glued_body = json.dumps({"title": title, "projectId": demo_data.PROJECT_TOWER_A}).encode()
    auth = f"Authorization: Bearer {served.token}\r\n".encode()
    glued = (
        b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + auth
        + b"Content-Length: %d\r\n\r\n" % len(glued_body)
        + glued_body
    )
    before = len(served.server.stderr)
    head = b"POST /api/sows HTTP/1.1\r\nHost: x\r\n" + auth + b"Transfer-Encoding: chunked\r\n"
    if chunks == SMUGGLING["chunked and a length"]:
        head += b"Content-Length: %d\r\n" % len(chunks)
    status, headers, body, closed = served.send(head + b"\r\n" + chunks + glued)
    assert closed, (status, body)  # nothing after the malformed request is read
    if chunks != SMUGGLING["chunked and a length"]:
        assert status.startswith("HTTP/1.1 400 "), (status, body)
        assert headers["connection"] == "close"
        if body:  # read by the engine: its envelope; refused by the parser: no body at all
            assert json.loads(body) == {"error": "malformed chunked body"}
    assert title not in served.sow_titles()
    assert "Traceback" not in "\n".join(served.server.stderr[before:])


def test_a_well_formed_chunked_body_with_a_glued_request_runs_both(served: Served) -> None:
    """The same glued request after a good chunked body is a second request, and runs."""
    title = "glued after a good body"
    glued_body = json.dumps({"title": title, "projectId": demo_data.PROJECT_TOWER_A}).encode()
    auth = f"Authorization: Bearer {served.token}\r\n".encode()
    first = json.dumps({"title": "first", "projectId": "nope"}).encode()
    request = (
        b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + auth
        + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(first), first)
        + b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + auth
        + b"Content-Length: %d\r\n\r\n" % len(glued_body)
        + glued_body
    )
    with socket.create_connection(served.address, timeout=5) as sock:
        sock.sendall(request)
        assert read_answer(sock)[0].startswith("HTTP/1.1 404")  # project nope
        assert read_answer(sock)[0].startswith("HTTP/1.1 201")
    assert title in served.sow_titles()


def _new_lines(served: Served, before: int, wanted: list[str], timeout: float = 30.0) -> bool:
    """Whether stderr lines after the first ``before`` come to hold each of ``wanted``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = served.server.stderr[before:]
        if all(any(text in line for line in new) for text in wanted):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow  # a real server
def test_a_token_sent_as_the_method_is_neither_echoed_nor_logged(served: Served) -> None:
    before = len(served.server.stderr)
    status, _, body, _ = served.send(_line(served, "{token} /projects HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert status.startswith("HTTP/1.1 405") and served.token[5:20].upper() not in body.decode().upper()
    assert _new_lines(served, before, ['"sowt_*** /projects HTTP/1.1" 405']), served.server.stderr


@pytest.mark.slow  # a real server
def test_the_server_keeps_serving_after_malformed_requests(served: Served) -> None:
    for _, request_text in UNREADABLE:
        served.send(_line(served, request_text))
    status, headers, _, _ = served.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.startswith("HTTP/1.1 200 ") and headers["x-content-type-options"] == "nosniff"


# --- the server's own log lines, under the redaction rule, in process ---------------------------


def test_the_servers_log_cuts_secrets_in_messages_arguments_and_tracebacks() -> None:
    import logging.config

    from sowctl.engine import logs

    stream = io.StringIO()
    config = logs.config()
    config["handlers"]["stderr"]["stream"] = stream
    logging.config.dictConfig(config)
    logger = logging.getLogger("_granian")
    secret = "sowt_" + "A1b2C3d4" * 5
    logger.warning("Invalid request: %s", f"GET /a\x01{secret} HTTP/1.1")
    logger.error(f"quoted: 'X-Api-Key sowk_{secret[5:]}' and sowt%5F{secret[5:]}")
    try:
        raise ValueError(f"boom {secret}")
    except ValueError:
        logger.exception("Error handling request %s", f"/api/{secret}")
    logger.info("chatter")  # below the level: not written
    err = stream.getvalue()
    assert secret[5:] not in err, err
    assert err.count("sowt_***") >= 3 and "sowk_***" in err and "ValueError: boom sowt_***" in err
    assert "chatter" not in err and err.startswith("[server] WARNING ")


def test_the_redacting_filter_leaves_other_loggers_and_plain_lines_alone() -> None:
    from sowctl.engine.logs import RedactFilter

    record = logging.LogRecord("_granian", logging.INFO, __file__, 1, "plain %s", ("text",), None)
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
