"""Which waiting request gets a worker's next free thread (sowctl.engine.turns)."""

from __future__ import annotations

import asyncio
import time

import pytest

from sowctl.engine.turns import QueueTimeout, Turns
from sowctl.engine.usage import CpuUsage


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _turns(threads: int, usage: CpuUsage | None = None, timeout: float = 10.0) -> Turns:
    return Turns(threads, usage or CpuUsage(2.0, 0.5, Clock()), timeout)


def _start(turns: Turns, started: list[str], caller: str, name: str) -> asyncio.Task[None]:
    async def take() -> None:
        await turns.acquire(caller)
        started.append(name)

    return asyncio.get_running_loop().create_task(take())


def test_a_freed_thread_goes_to_the_caller_with_fewest_running() -> None:
    async def scenario() -> list[str]:
        turns = _turns(3)  # one caller holds at most two
        started: list[str] = []
        for name in ("a1", "a2", "a3", "a4"):
            _start(turns, started, "A", name)
        await _settle()
        _start(turns, started, "C", "c1")  # the thread kept for others
        await _settle()
        for name in ("b1", "b2"):
            _start(turns, started, "B", name)
        await _settle()
        assert started == ["a1", "a2", "c1"] and turns.waiting() == 4  # no thread free
        for finished_by, expected in (("A", "b1"), ("C", "a3"), ("A", "b2"), ("B", "a4")):
            turns.release(finished_by)
            await _settle()
            assert started[-1] == expected, started  # A ran more: B first, though A came first
        return started

    assert asyncio.run(scenario()) == ["a1", "a2", "c1", "b1", "a3", "b2", "a4"]


def test_one_caller_holds_all_threads_but_one_and_another_gets_the_last_at_once() -> None:
    async def scenario() -> list[str]:
        turns = _turns(4)
        started: list[str] = []
        for n in range(6):
            _start(turns, started, "A", f"a{n}")
        await _settle()
        assert started == ["a0", "a1", "a2"] and turns.free == 1
        _start(turns, started, "B", "b0")
        await _settle()
        return started

    assert asyncio.run(scenario())[-1] == "b0"


def test_a_callers_own_requests_keep_their_order() -> None:
    async def scenario() -> list[str]:
        turns = _turns(1)
        started: list[str] = []
        for n in range(5):
            _start(turns, started, "A", str(n))
        await _settle()
        for _ in range(5):
            turns.release("A")
            await _settle()
        return started

    assert asyncio.run(scenario()) == ["0", "1", "2", "3", "4"]


def test_a_caller_over_its_share_starts_nothing_beside_others_until_its_bucket_refills() -> None:
    async def scenario() -> tuple[list[str], float]:
        usage = CpuUsage(burst=0.1, share=1.0)  # real time: refills 0.1 s of processor a second
        turns = Turns(3, usage, 10.0)
        started: list[str] = []
        usage.charge("heavy", 0.15)  # 0.05 s past its burst
        await turns.acquire("light")  # light is running
        began = time.monotonic()
        waiting = _start(turns, started, "heavy", "h1")
        await _settle()
        assert started == [] and turns.free == 2  # a thread is free, but heavy is over its share
        await asyncio.wait_for(waiting, 2)
        return started, time.monotonic() - began

    started, waited = asyncio.run(scenario())
    assert started == ["h1"] and waited >= 0.03  # once its bucket refilled


def test_alone_a_caller_over_its_share_gets_its_share_of_the_threads() -> None:
    async def scenario() -> list[str]:
        usage = CpuUsage(2.0, 0.5, Clock())
        turns = _turns(4, usage)
        usage.charge("heavy", 10.0)
        started: list[str] = []
        for name in ("h1", "h2", "h3", "h4"):
            _start(turns, started, "heavy", name)
        await _settle()
        return started

    assert asyncio.run(scenario()) == ["h1", "h2", "h3"]


def test_a_caller_over_its_share_waits_while_others_were_active_lately_then_runs_alone() -> None:
    async def scenario() -> tuple[list[str], float]:
        usage = CpuUsage(burst=2.0, share=0.5)
        turns = Turns(4, usage, 10.0, window=0.2)
        usage.charge("heavy", 100.0)  # far past its share: no refill within the test
        await turns.acquire("light")
        turns.release("light")  # light was here a moment ago, and may be back
        began = time.monotonic()
        started: list[str] = []
        waiting = _start(turns, started, "heavy", "h1")
        await _settle()
        assert started == []
        await asyncio.wait_for(waiting, 2)  # light stayed away for a whole window
        return started, time.monotonic() - began

    started, waited = asyncio.run(scenario())
    assert started == ["h1"] and waited >= 0.15


def test_a_request_that_waits_too_long_is_given_up_and_its_place_freed() -> None:
    async def scenario() -> None:
        turns = _turns(1, timeout=0.05)
        await turns.acquire("A")
        with pytest.raises(QueueTimeout):
            await turns.acquire("B")
        assert turns.waiting() == 0
        turns.release("A")
        await asyncio.wait_for(turns.acquire("B"), 1)  # the thread went to nobody else
        assert turns.free == 0 and dict(turns.running) == {"B": 1}

    asyncio.run(scenario())


def test_a_cancelled_wait_gives_its_thread_on() -> None:
    async def scenario() -> None:
        turns = _turns(1)
        await turns.acquire("A")
        waiting = asyncio.get_running_loop().create_task(turns.acquire("B"))
        await _settle()
        waiting.cancel()
        await _settle()
        turns.release("A")
        assert turns.free == 1 and turns.waiting() == 0 and not turns.running

    asyncio.run(scenario())
