"""The engine's bridge from the parser to a WSGI application (sowctl.engine.bridge), in process:
an ASGI scope and scripted receive/send stand in for granian."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from sowctl.engine import CUT_SHORT_KEY, PAUSE_KEY, Hooks, Limits, Pause, Refusal
from sowctl.engine.bridge import Bridge

KIB = 1024


@dataclass
class Result:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    ended: bool = False  # the final body message was sent
    messages: list[dict[str, Any]] = field(default_factory=list)
    received: int = 0  # calls of receive()


def run(
    app: Callable[..., Any],
    *,
    method: str = "GET",
    path: bytes = b"/x",
    query: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
    chunks: list[bytes] | None = None,
    disconnect: bool = False,
    limits: Limits | None = None,
    hooks: Hooks | None = None,
    send_blocks_after: int | None = None,
    bridge: Bridge | None = None,
) -> Result:
    bridge = bridge or Bridge(app, hooks or Hooks(), limits or Limits(), multiprocess=False)
    return asyncio.run(_exchange(bridge, method, path, query, headers, chunks, disconnect, send_blocks_after))


async def _exchange(
    bridge: Bridge,
    method: str,
    path: bytes,
    query: bytes,
    headers: list[tuple[bytes, bytes]] | None,
    chunks: list[bytes] | None,
    disconnect: bool,
    send_blocks_after: int | None,
) -> Result:
    result = Result()
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "path": path.decode("latin-1"),
        "raw_path": path,
        "query_string": query,
        "headers": headers or [],
        "client": ("10.0.0.1", "5000"),
        "server": ("127.0.0.1", "8000"),
        "scheme": "http",
    }
    pending = list(chunks or [])

    async def receive() -> dict[str, Any]:
        result.received += 1
        if pending:
            piece = pending.pop(0)
            more = bool(pending) or disconnect
            return {"type": "http.request", "body": piece, "more_body": more}
        if disconnect:
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()  # a client that sends nothing more
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        result.messages.append(message)
        if message["type"] == "http.response.start":
            result.status = message["status"]
            result.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            bodies = sum(1 for m in result.messages if m["type"] == "http.response.body")
            if send_blocks_after is not None and bodies > send_blocks_after:
                await asyncio.Event().wait()  # a client that stopped reading
            result.body += message.get("body", b"")
            result.ended = not message.get("more_body", False)

    await bridge(scope, receive, send)
    return result


def hello(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]


def echo(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]


class Recorded:
    """Refusals the engine logged, and the answers the application's hook worded."""

    def __init__(self) -> None:
        self.logged: list[tuple[str, str, str, str, int]] = []
        self.worded: list[tuple[str, Refusal]] = []

    def hooks(self, **more: Any) -> Hooks:
        def answer(path: str, refusal: Refusal) -> tuple[list[tuple[str, str]], bytes]:
            self.worded.append((path, refusal))
            return [("Content-Type", "application/json")], f'{{"error":"{refusal.message}"}}'.encode()

        return Hooks(answer=answer, on_refusal=lambda *line: self.logged.append(line[:5]), **more)


# --- the head ---------------------------------------------------------------------------------


def test_a_request_line_past_the_limit_is_414_in_the_applications_words_and_logged() -> None:
    seen = Recorded()
    result = run(hello, query=b"q=" + b"x" * 200, limits=Limits(max_request_line=100), hooks=seen.hooks())
    assert result.status == 414 and result.headers["connection"] == "close"
    assert result.body == b'{"error":"request line too long: the limit is 100 bytes"}'
    assert result.received == 0
    assert seen.logged == [("10.0.0.1", "GET", "/x?q=" + "x" * 200, "HTTP/1.1", 414)]


def test_headers_past_the_limit_are_431() -> None:
    headers = [(b"x-pad", b"y" * 300)]
    result = run(hello, headers=headers, limits=Limits(max_header_bytes=200), hooks=Recorded().hooks())
    assert result.status == 431 and b"the limit is 200 bytes" in result.body


@pytest.mark.parametrize("coding", [b"gzip, chunked", b"identity"])
def test_a_coding_besides_chunked_is_refused(coding: bytes) -> None:
    result = run(echo, method="POST", headers=[(b"transfer-encoding", coding)], chunks=[b"x"])
    assert result.status == 400 and b"unsupported transfer coding" in result.body
    assert result.received == 0


def test_a_body_framed_two_ways_is_refused_unread() -> None:
    """hyper reads such a body as chunked and drops the length; should a parser pass both,
    which one frames the body is what a proxy in front may read otherwise."""
    headers = [(b"content-length", b"5"), (b"transfer-encoding", b"chunked")]
    result = run(echo, method="POST", headers=headers, chunks=[b"x"], hooks=Recorded().hooks())
    assert result.status == 400 and b"conflicting Content-Length" in result.body
    assert result.received == 0 and result.headers["connection"] == "close"


def test_a_body_announced_too_large_is_413_before_any_of_it_is_read() -> None:
    seen = Recorded()
    headers = [(b"content-length", b"2000")]
    result = run(
        echo,
        method="POST",
        headers=headers,
        chunks=[b"x"],
        limits=Limits(max_body_bytes=1000),
        hooks=seen.hooks(),
    )
    assert result.status == 413 and result.received == 0 and result.headers["connection"] == "close"
    assert seen.worded[0][1].limit == 1000


def test_the_applications_body_limit_per_route_and_its_refusal_from_the_head() -> None:
    def body_limit(method: str, path: str, authorization: str | None) -> int | Refusal:
        if path == "/upload":
            return (
                5000 if authorization == "Bearer admin" else Refusal(401, "a body this large needs a token")
            )
        return 1000

    hooks = Recorded().hooks(body_limit=body_limit)
    limits = Limits(max_body_bytes=1000)
    big = [(b"content-length", b"3000")]
    assert run(echo, method="POST", path=b"/upload", headers=big, limits=limits, hooks=hooks).status == 401
    admin = [*big, (b"authorization", b"Bearer admin")]
    allowed = run(
        echo, method="POST", path=b"/upload", headers=admin, chunks=[b"x" * 3000], limits=limits, hooks=hooks
    )
    assert allowed.status == 200 and allowed.body == b"x" * 3000
    small = [(b"content-length", b"3")]
    assert (
        run(
            echo, method="POST", path=b"/upload", headers=small, chunks=[b"abc"], limits=limits, hooks=hooks
        ).body
        == b"abc"
    )


# --- the body ---------------------------------------------------------------------------------


def test_a_chunked_body_is_read_whole_and_handed_over_with_its_length() -> None:
    seen: dict[str, Any] = {}

    def app(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        seen.update(environ)
        return echo(environ, start_response)

    result = run(app, method="POST", headers=[(b"transfer-encoding", b"chunked")], chunks=[b"ab", b"cd", b""])
    assert result.status == 200 and result.body == b"abcd"
    assert seen["CONTENT_LENGTH"] == "4" and "HTTP_TRANSFER_ENCODING" not in seen


def test_a_chunked_body_past_the_limit_is_413_once_it_passes_it() -> None:
    headers = [(b"transfer-encoding", b"chunked")]
    result = run(
        echo,
        method="POST",
        headers=headers,
        chunks=[b"x" * 600, b"x" * 600, b"x"],
        limits=Limits(max_body_bytes=1000),
    )
    assert result.status == 413 and result.received == 2


def test_a_malformed_chunked_body_is_400_and_closes() -> None:
    """The parser reports a malformed chunk as a disconnect."""
    headers = [(b"transfer-encoding", b"chunked")]
    result = run(
        echo, method="POST", headers=headers, chunks=[b"ab"], disconnect=True, hooks=Recorded().hooks()
    )
    assert result.status == 400 and result.body == b'{"error":"malformed chunked body"}'
    assert result.headers["connection"] == "close"


def test_a_body_not_sent_in_time_is_408() -> None:
    headers = [(b"content-length", b"100")]
    started = time.monotonic()
    result = run(
        echo,
        method="POST",
        headers=headers,
        chunks=None,
        limits=Limits(body_timeout=0.1),
        hooks=Recorded().hooks(),
    )
    assert result.status == 408 and result.body == b'{"error":"the request was not received in time"}'
    assert time.monotonic() - started < 5


def test_large_bodies_past_the_workers_cap_are_503_and_their_bytes_freed() -> None:
    limits = Limits(max_buffered_bytes=1000, free_body_bytes=100)
    gate = threading.Event()

    def slow_echo(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        gate.wait(5)
        return echo(environ, start_response)

    bridge = Bridge(slow_echo, Recorded().hooks(), limits, multiprocess=False)
    headers = [(b"content-length", b"700")]

    async def scenario() -> list[Result]:
        first = asyncio.ensure_future(
            _exchange(bridge, "POST", b"/x", b"", headers, [b"x" * 700], False, None)
        )
        await asyncio.sleep(0.05)  # the first holds 600 counted bytes while the app runs
        second = await _exchange(bridge, "POST", b"/x", b"", headers, [b"y" * 700], False, None)
        gate.set()
        return [
            await first,
            second,
            await _exchange(bridge, "POST", b"/x", b"", headers, [b"z" * 700], False, None),
        ]

    first, second, third = asyncio.run(scenario())
    assert first.status == 200 and len(first.body) == 700
    assert second.status == 503 and second.headers["retry-after"] == "1"
    assert third.status == 200  # the first's bytes were freed when it ended
    assert bridge.buffers.total == 0


# --- the environ ------------------------------------------------------------------------------


def test_the_environ_follows_pep_3333_and_drops_headers_named_with_underscores() -> None:
    seen: dict[str, Any] = {}

    def app(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        seen.update(environ)
        return hello(environ, start_response)

    headers = [
        (b"x-api-key", b"real"),
        (b"x_api_key", b"spoofed"),
        (b"x-dup", b"1"),
        (b"x-dup", b"2"),
        (b"content-type", b"application/json"),
    ]
    run(app, path=b"/a%2Fb/%C3%A9", query=b"q=%20", headers=headers)
    assert seen["PATH_INFO"] == "/a/b/\xc3\xa9" and seen["QUERY_STRING"] == "q=%20"
    assert seen["HTTP_X_API_KEY"] == "real" and seen["HTTP_X_DUP"] == "1,2"
    assert seen["CONTENT_TYPE"] == "application/json" and "CONTENT_LENGTH" not in seen
    assert seen["REMOTE_ADDR"] == "10.0.0.1" and seen["SERVER_PROTOCOL"] == "HTTP/1.1"


# --- answers ----------------------------------------------------------------------------------


class Streamed:
    """A streamed answer that records how far it was taken and whether it was closed."""

    def __init__(self, pieces: int, size: int = 64 * KIB) -> None:
        self.pieces = pieces
        self.size = size
        self.made = 0
        self.closed = False
        self.environ: dict[str, Any] = {}

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Iterator[bytes]:
        self.environ = environ
        start_response("200 OK", [("Content-Type", "application/json")])
        return self

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.pieces):
            self.made += 1
            yield b"x" * self.size

    def close(self) -> None:
        self.closed = True


def test_a_streamed_answer_is_sent_whole_and_closed() -> None:
    app = Streamed(10)
    result = run(app)
    assert result.status == 200 and len(result.body) == 10 * 64 * KIB and result.ended
    assert app.closed and CUT_SHORT_KEY not in app.environ


def test_a_client_that_stops_reading_is_cut_off_and_the_answer_closed() -> None:
    app = Streamed(100)
    limits = Limits(send_timeout=0.1, min_send_rate=64 * KIB)
    started = time.monotonic()
    result = run(app, limits=limits, send_blocks_after=2)
    assert result.status == 200 and not result.ended
    assert app.closed and app.made < 100 and app.environ[CUT_SHORT_KEY] == "too-slow"
    assert time.monotonic() - started < 5


def test_a_head_request_is_answered_without_making_the_body() -> None:
    app = Streamed(100)
    result = run(app, method="HEAD")
    assert result.status == 200 and result.body == b"" and result.ended
    assert app.made == 0 and app.closed


def test_a_large_whole_answer_is_sent_in_pieces() -> None:
    def big(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [("Content-Length", str(1024 * KIB))])
        return [b"y" * (1024 * KIB)]

    result = run(big)
    sizes = [len(m.get("body", b"")) for m in result.messages if m["type"] == "http.response.body"]
    assert result.body == b"y" * (1024 * KIB) and max(sizes) == 256 * KIB and result.ended


def test_an_application_that_asks_for_a_drop_gets_a_cut_connection() -> None:
    def drop(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        raise ConnectionResetError("injected")

    result = run(drop)
    assert result.status == 503 and result.headers["connection"] == "close"
    assert result.body == b"" and not result.ended  # the body never completes


def test_an_application_that_raises_gets_a_500_in_its_own_words(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        raise RuntimeError("boom sowt_" + "A" * 30)

    result = run(broken, hooks=Recorded().hooks())
    assert result.status == 500 and result.body == b'{"error":"internal server error"}'
    err = capsys.readouterr().err
    assert "boom sowt_***" in err and "AAAA" not in err and "Traceback" not in err


def test_a_request_that_waits_too_long_for_a_thread_gets_503() -> None:
    gate = threading.Event()

    def blocking(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        gate.wait(5)
        return hello(environ, start_response)

    bridge = Bridge(blocking, Recorded().hooks(), Limits(threads=1, queue_timeout=0.1), multiprocess=False)

    async def scenario() -> tuple[Result, Result]:
        first = asyncio.ensure_future(_exchange(bridge, "GET", b"/x", b"", [], [], False, None))
        await asyncio.sleep(0.02)
        second = await _exchange(bridge, "GET", b"/x", b"", [], [], False, None)
        gate.set()
        return await first, second

    first, second = asyncio.run(scenario())
    assert first.status == 200 and second.status == 503 and second.headers["retry-after"] == "1"


def test_the_processor_time_of_a_request_is_charged_to_its_caller() -> None:
    def burn(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        deadline = time.thread_time() + 0.05
        while time.thread_time() < deadline:
            pass
        return hello(environ, start_response)

    hooks = Hooks(caller=lambda environ: environ.get("HTTP_AUTHORIZATION"))
    bridge = Bridge(burn, hooks, Limits(cpu_burst=1.0, cpu_share=0.001), multiprocess=False)
    run(burn, headers=[(b"authorization", b"heavy")], bridge=bridge)
    assert bridge.usage.level("heavy") <= 0.96
    assert bridge.usage.level("light") == 1.0


def test_the_lifespan_is_answered() -> None:
    bridge = Bridge(hello, Hooks(), Limits(), multiprocess=False)
    sent: list[dict[str, Any]] = []
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(bridge({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_a_pause_sends_what_came_before_and_frees_the_thread_until_the_next_pieces() -> None:
    """A body that yields ``Pause`` (an event stream between two looks): each piece before it
    goes out at once, not batched with the next, and the environ says pauses are understood."""
    made_on: list[str] = []
    seen: dict[str, Any] = {}

    def paused(environ: dict, start_response: Callable[..., Any]) -> Iterator[bytes]:
        seen["pause"] = environ.get(PAUSE_KEY)
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        for n in range(3):
            made_on.append(threading.current_thread().name)
            yield f"event {n}\n".encode()
            yield Pause(0.01)

    result = run(paused, limits=Limits(threads=1))
    bodies = [m.get("body", b"") for m in result.messages if m["type"] == "http.response.body"]
    assert bodies[:3] == [b"event 0\n", b"event 1\n", b"event 2\n"]  # one message each: not batched
    assert result.body == b"event 0\nevent 1\nevent 2\n" and result.ended
    assert seen["pause"] is True
    assert len(made_on) == 3


def test_a_paused_answer_holds_no_thread_while_it_waits() -> None:
    """One thread: a request that comes while a stream is paused is answered before the
    stream goes on (without pauses, the stream would hold the only thread)."""

    def routed(environ: dict, start_response: Callable[..., Any]) -> Any:
        if environ["PATH_INFO"] == "/quick":
            return hello(environ, start_response)
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        return iter([b"first\n", Pause(2.0), b"second\n"])

    async def both() -> tuple[Result, bool]:
        bridge = Bridge(routed, Hooks(), Limits(threads=1), multiprocess=False)
        stream = asyncio.create_task(_exchange(bridge, "GET", b"/stream", b"", None, None, False, None))
        await asyncio.sleep(0.2)  # the stream has sent its first piece and paused
        quick = await _exchange(bridge, "GET", b"/quick", b"", None, None, False, None)
        still_paused = not stream.done()
        streamed = await stream
        assert streamed.body == b"first\nsecond\n" and streamed.ended
        return quick, still_paused

    quick, still_paused = asyncio.run(both())
    assert quick.status == 200 and quick.body == b"hello"
    assert still_paused
