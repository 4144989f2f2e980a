"""A caller's share of a worker's processor (sowctl.engine.usage): a bucket per caller."""

from __future__ import annotations

from sowctl.engine.usage import CpuUsage


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_is_over_its_share_once_its_burst_is_spent_and_recovers_at_the_share() -> None:
    clock = Clock()
    usage = CpuUsage(burst=2.0, share=0.5, clock=clock)
    assert usage.level("a") == 2.0 and not usage.over("a")
    usage.charge("a", 1.5)
    assert not usage.over("a")
    usage.charge("a", 1.0)
    assert usage.over("a") and usage.level("a") == -0.5
    assert not usage.over("b")  # per caller
    clock.now += 0.9  # refills 0.45 s
    assert usage.over("a")
    clock.now += 0.2
    assert not usage.over("a")
    clock.now += 100
    assert usage.level("a") == 2.0  # never more than the burst


def test_no_share_means_no_limit() -> None:
    usage = CpuUsage(burst=2.0, share=0.0, clock=Clock())
    usage.charge("a", 100.0)
    assert not usage.over("a")


def test_callers_whose_bucket_is_full_again_are_forgotten_past_the_bound(monkeypatch) -> None:
    from sowctl.engine import usage as module

    monkeypatch.setattr(module, "_REMEMBERED", 10)
    clock = Clock()
    usage = CpuUsage(burst=1.0, share=1.0, clock=clock)
    for n in range(10):
        usage.charge(n, 0.5)
    clock.now += 5
    usage.charge("new", 0.5)
    assert len(usage._buckets) == 1
