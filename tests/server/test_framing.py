"""sowctl.server.framing: where a request ends, and whether it is within limits (no sockets)."""

from __future__ import annotations

import pytest

from sowctl.server.framing import Complete, Limits, Refusal, RequestFramer

LIMITS = Limits(max_request_line=100, max_header_bytes=200, max_body_bytes=1000)


def feed(data: bytes, *, step: int | None = None) -> tuple[Complete | Refusal | None, RequestFramer]:
    """Scan ``data`` as it would arrive: all at once, or ``step`` bytes at a time."""
    framer = RequestFramer(LIMITS)
    if step is None:
        return framer.scan(data), framer
    outcome = None
    for end in range(step, len(data) + step, step):
        outcome = framer.scan(data[:end])
        if outcome is not None:
            break
    return outcome, framer


@pytest.mark.parametrize("step", [None, 1, 7])
def test_a_request_ends_after_its_head_or_its_announced_body(step: int | None) -> None:
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    assert feed(get + b"GET /next", step=step)[0] == Complete(len(get))
    post = b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
    assert feed(post + b"abc", step=step)[0] is None
    assert feed(post + b"abcdeGET", step=step)[0] == Complete(len(post) + 5)


@pytest.mark.parametrize("step", [None, 1, 5])
def test_a_chunked_body_ends_after_its_last_chunk_and_trailers(step: int | None) -> None:
    head = b"POST /api/sows HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = b"5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n"
    assert feed(head + body[:-2], step=step)[0] is None
    assert feed(head + body + b"next", step=step)[0] == Complete(len(head + body))


def test_an_overlong_request_line_is_414_before_its_end_arrives() -> None:
    outcome = feed(b"GET /api/sows?q=" + b"x" * 200)[0]
    assert outcome == Refusal(414, "URI Too Long", "request line too long: the limit is 100 bytes")
    assert RequestFramer.path(b"GET /api/sows?q=" + b"x" * 200) == "/api/sows"
    assert RequestFramer.path(b"GET http://h:1/projects/x?y HTTP/1.1\r\n") == "/projects/x"
    assert RequestFramer.path(b"GARBAGE") == "/"
    assert isinstance(feed(b"GET /" + b"x" * 100 + b" HTTP/1.1\r\n")[0], Refusal)
    assert feed(b"GET /" + b"x" * 80 + b" HTTP/1.1\r\n")[0] is None  # within the limit


def test_headers_over_the_limit_are_431_whether_or_not_they_end() -> None:
    line = b"GET /projects HTTP/1.1\r\n"
    for tail in (b"", b"\r\n\r\n"):
        outcome = feed(line + b"X-Pad: " + b"y" * 300 + tail)[0]
        assert isinstance(outcome, Refusal) and outcome.status == 431, tail
        assert RequestFramer.path(line) == "/projects"


def test_a_body_announced_too_large_is_413_at_once_and_continue_is_only_for_fitting_ones() -> None:
    head = b"POST /api/sows HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
    outcome, framer = feed(head % 1001)
    assert isinstance(outcome, Refusal) and outcome.status == 413
    outcome, framer = feed(head % 1000)
    assert outcome is None and framer.expects_continue and framer.head_complete
    assert not feed(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")[
        1
    ].expects_continue


def test_a_chunked_body_is_413_once_it_passes_the_limit() -> None:
    head = b"POST /api/sows HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert isinstance(feed(head + b"3e9\r\n")[0], Refusal)  # 1001 bytes announced by one chunk
    many = b"".join(b"64\r\n" + b"x" * 100 + b"\r\n" for _ in range(11))  # 1100 bytes in 11 chunks
    assert isinstance(feed(head + many)[0], Refusal)


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",  # both: a smuggling attempt
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Content-Length: -1\r\n",
        b"Transfer-Encoding: gzip\r\n",
    ],
)
def test_framing_it_does_not_follow_is_left_to_gunicorn_and_closes_the_connection(headers: bytes) -> None:
    head = b"POST /api/sows HTTP/1.1\r\n" + headers + b"\r\n"
    assert feed(head + b"hello")[0] == Complete(len(head), close_after=True)


@pytest.mark.parametrize(
    "codings", [b"gzip, chunked", b"chunked, chunked", b"gzip\r\nTransfer-Encoding: chunked"]
)
def test_a_transfer_coding_besides_chunked_is_refused_with_400(codings: bytes) -> None:
    """The body would reach the application still gzip-encoded; chunked alone is served."""
    head = b"POST /api/sows HTTP/1.1\r\nTransfer-Encoding: " + codings + b"\r\n\r\n"
    assert feed(head + b"5\r\nhello\r\n0\r\n\r\n")[0] == Refusal(
        400, "Bad Request", "unsupported transfer coding (only chunked is)"
    )


def test_a_bad_chunk_size_is_left_to_gunicorn() -> None:
    head = b"POST /api/sows HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    outcome, _ = feed(head + b"zz\r\nhello\r\n")
    assert isinstance(outcome, Complete) and outcome.close_after


def test_the_body_limit_may_depend_on_the_path() -> None:
    framer = RequestFramer(LIMITS, lambda path, _auth: 5000 if path == "/_admin/dataset" else 10)
    head = b"POST %s HTTP/1.1\r\nContent-Length: 2000\r\n\r\n"
    assert framer.scan(head % b"/_admin/dataset") is None and framer.max_body == 5000
    framer = RequestFramer(LIMITS, lambda path, _auth: 5000 if path == "/_admin/dataset" else 10)
    outcome = framer.scan(head % b"/api/sows")
    assert isinstance(outcome, Refusal) and outcome.status == 413 and framer.max_body == 10


def test_a_large_body_from_a_caller_the_path_refuses_is_401_before_it_is_read() -> None:
    def limit(path: str, authorization: str | None) -> int | None:
        return 5000 if authorization == "Bearer Right-Case" else None

    head = b"POST /_admin/dataset HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n"
    framer = RequestFramer(LIMITS, limit)
    assert framer.scan(head % (b"authorization: Bearer Right-Case\r\n", 2000)) is None
    framer = RequestFramer(LIMITS, limit)
    outcome = framer.scan(head % (b"Authorization: Bearer right-case\r\n", 2000))
    assert isinstance(outcome, Refusal) and outcome.status == 401
    framer = RequestFramer(LIMITS, limit)  # a body the default limit allows goes on, to the route's 401
    assert framer.scan(head % (b"", 5)) is None and framer.max_body == LIMITS.max_body_bytes
