"""Heavy requests in helper processes (sowctl.engine.heavy, sowctl.engine.isolation), in process:
an ASGI scope and scripted receive/send stand in for granian, and the helpers are real
processes forked from this one."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sowctl.engine import Hooks, Limits
from sowctl.engine.bridge import Bridge
from sowctl.engine.isolation import start_zygote

KIB = 1024


def app(environ: dict, start_response: Callable[..., Any]) -> Iterator[bytes]:
    """Answers with its process id; ``/wait`` until the file named in X-Flag exists,
    ``/die`` ends its process, ``/stream`` answers 10 pieces of 64 KiB, ``/boom`` fails."""
    path = environ["PATH_INFO"]
    if path == "/die":
        os._exit(3)
    if path == "/boom":
        raise RuntimeError("boom")
    if path == "/wait":
        flag = Path(environ["HTTP_X_FLAG"])
        give_up = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < give_up:
            time.sleep(0.01)
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-Pid", str(os.getpid()))])
    if path == "/stream":
        return (bytes([n]) * 64 * KIB for n in range(10))
    return iter([body or b"hello"])


def heavy_unless_light(method: str, path: str, body_bytes: int) -> bool | None:
    if path == "/pinned":
        return None  # never heavy (an event stream): it stays in the worker
    return path != "/light"


@pytest.fixture
def bridge() -> Iterator[Bridge]:
    hooks = Hooks(caller=lambda environ: environ.get("HTTP_AUTHORIZATION"), heavy=heavy_unless_light)
    limits = Limits(threads=1, heavy_processes=1, heavy_queue=1)
    made = Bridge(app, hooks, limits, multiprocess=False, zygote=start_zygote(lambda: app))
    yield made
    assert made.lane is not None
    made.lane.stop()


@dataclass
class Result:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    ended: bool = False


async def exchange(bridge: Bridge, path: str, caller: str = "a", body: bytes = b"", flag: str = "") -> Result:
    result = Result()
    headers = [(b"authorization", caller.encode()), (b"content-length", str(len(body)).encode())]
    if flag:
        headers.append((b"x-flag", flag.encode()))
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST" if body else "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "client": ("10.0.0.1", "5000"),
        "server": ("127.0.0.1", "8000"),
        "scheme": "http",
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            result.status = message["status"]
            result.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            result.body += message.get("body", b"")
            result.ended = not message.get("more_body", False)

    await bridge(scope, receive, send)
    return result


def run(bridge: Bridge, path: str, **more: Any) -> Result:
    return asyncio.run(exchange(bridge, path, **more))


def test_a_heavy_request_is_answered_by_a_helper_process_exactly_as_by_a_thread(bridge: Bridge) -> None:
    body = b"x" * (300 * KIB)
    heavy = run(bridge, "/echo", body=body)
    light = run(bridge, "/light", body=body)
    assert heavy.status == light.status == 200 and heavy.body == light.body == body
    assert heavy.ended and light.ended
    assert light.headers["x-pid"] == str(os.getpid())
    assert heavy.headers["x-pid"] != str(os.getpid())
    assert {k: v for k, v in heavy.headers.items() if k != "x-pid"} == {
        k: v for k, v in light.headers.items() if k != "x-pid"
    }


def test_a_streamed_answer_is_made_piece_by_piece_in_the_helper(bridge: Bridge) -> None:
    result = run(bridge, "/stream")
    assert result.status == 200 and result.ended
    assert result.body == b"".join(bytes([n]) * 64 * KIB for n in range(10))
    assert result.headers["x-pid"] != str(os.getpid())


def test_a_caller_past_its_processor_allowance_beside_others_is_served_by_the_helper(bridge: Bridge) -> None:
    bridge.usage.charge("spender", 1.0)  # more than heavy_cpu of its burst
    alone = run(bridge, "/light", caller="spender")
    other = run(bridge, "/light", caller="other")  # another caller is active from now on
    beside = run(bridge, "/light", caller="spender")
    assert alone.headers["x-pid"] == other.headers["x-pid"] == str(os.getpid())
    assert beside.status == 200 and beside.headers["x-pid"] != str(os.getpid())


def test_a_request_the_application_pins_stays_in_the_worker_whatever_its_caller_spent(bridge: Bridge) -> None:
    bridge.usage.charge("spender", 1.0)
    run(bridge, "/light", caller="other")  # another caller is active
    pinned = run(bridge, "/pinned", caller="spender")
    assert pinned.status == 200 and pinned.headers["x-pid"] == str(os.getpid())


def test_an_ordinary_request_of_a_spender_whose_helper_queue_is_full_is_answered_by_the_worker(
    bridge: Bridge, tmp_path: Path
) -> None:
    flag = tmp_path / "go"
    lane = bridge.lane
    assert lane is not None
    bridge.usage.charge("spender", 1.0)

    async def scenario() -> tuple[Result, Result, Result]:
        await exchange(bridge, "/light", caller="other")  # another caller is active from now on
        running = asyncio.ensure_future(exchange(bridge, "/wait", caller="spender", flag=str(flag)))
        while not lane.turns.running:
            await asyncio.sleep(0.01)
        waiting = asyncio.ensure_future(exchange(bridge, "/wait", caller="spender", flag=str(flag)))
        while not lane.waiting:
            await asyncio.sleep(0.01)
        light = asyncio.ensure_future(exchange(bridge, "/light", caller="spender"))
        await asyncio.sleep(0)
        flag.touch()
        return await running, await waiting, await light

    running, waiting, light = asyncio.run(scenario())
    assert running.status == waiting.status == 200
    assert light.status == 200 and light.headers["x-pid"] == str(os.getpid())  # not refused: it waited


def test_a_callers_heavy_request_past_its_queue_is_refused_with_retry_after(
    bridge: Bridge, tmp_path: Path
) -> None:
    flag = tmp_path / "go"
    lane = bridge.lane
    assert lane is not None

    async def scenario() -> tuple[Result, Result, Result, Result]:
        running = asyncio.ensure_future(exchange(bridge, "/wait", flag=str(flag)))
        while not lane.turns.running:
            await asyncio.sleep(0.01)
        waiting = asyncio.ensure_future(exchange(bridge, "/wait", flag=str(flag)))
        while not lane.waiting:
            await asyncio.sleep(0.01)
        refused = await exchange(bridge, "/wait", flag=str(flag))
        others = asyncio.ensure_future(exchange(bridge, "/wait", caller="b", flag=str(flag)))
        while lane.waiting["b"] == 0:
            await asyncio.sleep(0.01)
        flag.touch()
        return await running, await waiting, refused, await others

    running, waiting, refused, others = asyncio.run(scenario())
    assert running.status == waiting.status == others.status == 200
    assert refused.status == 503 and refused.headers["retry-after"] == "1"
    assert b"heavy requests" in refused.body


def test_a_helper_that_dies_answers_503_and_is_started_again(bridge: Bridge) -> None:
    first = run(bridge, "/x")
    died = run(bridge, "/die")
    after = run(bridge, "/x")
    assert died.status == 503 and died.headers["retry-after"] == "1"
    assert first.status == after.status == 200
    assert after.headers["x-pid"] not in (first.headers["x-pid"], str(os.getpid()))


def test_an_application_failing_in_the_helper_gets_a_500(bridge: Bridge) -> None:
    result = run(bridge, "/boom")
    assert result.status == 500 and b"internal server error" in result.body
    assert run(bridge, "/x").status == 200
