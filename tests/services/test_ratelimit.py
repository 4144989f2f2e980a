"""Per-API-key rate limits counted in the database.

The clock is fixed (``clock.set_fixed_now``) so no test straddles a minute boundary.
"""

from __future__ import annotations

import calendar
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timedelta

import pytest

from sowctl.foundation import clock
from sowctl.foundation.errors import UsageError
from sowctl.services import credentials
from sowctl.services.ratelimit import RateLimits, RateState, hit
from sowctl.storage import models as m
from sowctl.storage.database import open_database
from tests.support.minutes import in_one_minute

T0 = datetime(2026, 3, 16, 12, 0, 15)  # 15 s into a minute
DEFAULT = RateLimits()


def epoch(moment: datetime) -> int:
    return calendar.timegm(moment.timetuple())


NEXT_MINUTE = epoch(datetime(2026, 3, 16, 12, 1, 0))
NEXT_DAY = epoch(datetime(2026, 3, 17))


@pytest.fixture
def key(db) -> str:
    m.Organization.create(id="org-1", name="Org")
    clock.set_fixed_now(T0)
    return credentials.create_key("org-1").id


@pytest.fixture
def other_key(key) -> str:
    return credentials.create_key("org-1").id


def counts(key_id: str) -> dict[str, int]:
    rows = m.RateCounter.select(m.RateCounter.window, m.RateCounter.count).where(
        m.RateCounter.api_key == key_id
    )
    return dict(rows.tuples())


def test_first_request_reports_the_minute_window(key):
    assert hit(key, DEFAULT) == RateState(limit=100, remaining=99, reset=NEXT_MINUTE, retry_after=None)
    assert counts(key) == {"minute": 1, "day": 1}


def test_hundred_and_first_request_in_a_minute_is_refused(key):
    states = [hit(key, DEFAULT) for _ in range(100)]
    assert [s.remaining for s in states] == list(range(99, -1, -1))
    assert all(s.allowed and s.limit == 100 and s.reset == NEXT_MINUTE for s in states)
    refused = hit(key, DEFAULT)
    assert refused == RateState(limit=100, remaining=0, reset=NEXT_MINUTE, retry_after=45)
    assert not refused.allowed
    assert refused.headers() == {
        "X-RateLimit-Limit": "100",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": str(NEXT_MINUTE),
        "Retry-After": "45",
    }


def test_refused_requests_do_not_consume_quota(key):
    for _ in range(100):
        hit(key, DEFAULT)
    for _ in range(20):
        assert not hit(key, DEFAULT).allowed
    assert counts(key) == {"minute": 100, "day": 100}
    clock.set_fixed_now(T0 + timedelta(seconds=45))  # the next minute
    state = hit(key, DEFAULT)
    assert state.allowed and state.remaining == 99
    assert counts(key) == {"minute": 1, "day": 101}  # the old minute window was pruned


def test_retry_after_counts_down_to_the_window_end(key):
    limits = RateLimits(per_minute=1, per_day=100)
    hit(key, limits)
    clock.set_fixed_now(datetime(2026, 3, 16, 12, 0, 59))
    assert hit(key, limits).retry_after == 1
    clock.set_fixed_now(datetime(2026, 3, 16, 12, 1, 0))
    assert hit(key, limits).allowed


def test_daily_limit_binds_when_it_is_closer(key):
    limits = RateLimits(per_minute=3, per_day=5)
    assert [(s.limit, s.remaining, s.reset) for s in (hit(key, limits) for _ in range(3))] == [
        (3, 2, NEXT_MINUTE),
        (3, 1, NEXT_MINUTE),
        (3, 0, NEXT_MINUTE),
    ]
    clock.set_fixed_now(T0 + timedelta(minutes=1))
    # minute: 2 left, day: 1 left -> the day window is reported.
    assert hit(key, limits) == RateState(5, 1, NEXT_DAY, None)
    assert hit(key, limits) == RateState(5, 0, NEXT_DAY, None)
    refused = hit(key, limits)
    assert refused == RateState(5, 0, NEXT_DAY, NEXT_DAY - epoch(T0 + timedelta(minutes=1)))
    clock.set_fixed_now(T0 + timedelta(minutes=30))  # new minute, same day: still refused
    assert not hit(key, limits).allowed
    clock.set_fixed_now(datetime(2026, 3, 17, 0, 0, 0))  # a new UTC day
    assert hit(key, limits) == RateState(3, 2, epoch(datetime(2026, 3, 17, 0, 1)), None)


def test_both_windows_exhausted_retry_after_the_later_reset(key):
    limits = RateLimits(per_minute=2, per_day=2)
    hit(key, limits)
    hit(key, limits)
    refused = hit(key, limits)
    assert (refused.limit, refused.reset) == (2, NEXT_DAY)
    assert refused.retry_after == NEXT_DAY - epoch(T0)


def test_tie_reports_the_minute_window(key):
    assert hit(key, RateLimits(per_minute=5, per_day=5)).reset == NEXT_MINUTE


def test_limits_are_per_key(key, other_key):
    for _ in range(100):
        hit(key, DEFAULT)
    assert not hit(key, DEFAULT).allowed
    state = hit(other_key, DEFAULT)
    assert state.allowed and state.remaining == 99
    assert counts(other_key) == {"minute": 1, "day": 1}


def test_counters_survive_a_restart(key, db_url, db):
    for _ in range(60):
        hit(key, DEFAULT)
    db.close()
    open_database(db_url)
    assert hit(key, DEFAULT).remaining == 39


def test_stale_windows_of_every_key_are_pruned_on_a_new_day(key, other_key):
    hit(key, DEFAULT)
    hit(other_key, DEFAULT)
    clock.set_fixed_now(T0 + timedelta(days=1))
    hit(key, DEFAULT)
    assert counts(key) == {"minute": 1, "day": 1}
    assert counts(other_key) == {}  # finished windows of an idle key are gone too
    assert m.RateCounter.select().count() == 2


@pytest.mark.parametrize(("minute", "day"), [(0, 10), (10, 0), (-1, 10), (True, 10)])
def test_limits_must_be_positive_integers(minute, day):
    with pytest.raises(UsageError, match="must be a positive integer"):
        RateLimits(per_minute=minute, per_day=day)


def test_concurrent_requests_on_a_fresh_key_exactly_hundred_pass(key):
    results: list[bool] = []
    errors: list[BaseException] = []
    # 50 threads with 3 hits each: every thread holds one database connection, and
    # PostgreSQL's default max_connections (100) would refuse 150 of them.
    barrier = threading.Barrier(50)

    def request() -> None:
        try:
            barrier.wait()
            for _ in range(3):
                results.append(hit(key, DEFAULT).allowed)
        except BaseException as exc:
            errors.append(exc)
        finally:
            m.database_proxy.close()

    threads = [threading.Thread(target=request) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (results.count(True), results.count(False)) == (100, 50)
    assert counts(key) == {"minute": 100, "day": 100}


WORKER = textwrap.dedent(
    """
    import sys
    from datetime import datetime
    from sowctl.foundation import clock
    from sowctl.storage.database import open_database
    from sowctl.services.ratelimit import RateLimits, hit

    open_database(sys.argv[1])
    clock.set_fixed_now(datetime(2026, 3, 16, 12, 0, 15))
    allowed = sum(hit(sys.argv[2], RateLimits()).allowed for _ in range(50))
    print(allowed)
    """
)


def test_worker_processes_share_the_counters(key, db_url):
    """Three processes (like three server workers) hit one key 150 times: 100 pass."""
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, db_url, key], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    allowed = []
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        allowed.append(int(out))
    assert sum(allowed) == 100
    assert counts(key) == {"minute": 100, "day": 100}


class _DriftingDatetime(datetime):
    """A process clock that jumps a minute back and forth on every reading, like two
    instances behind one load balancer whose clocks are a minute apart."""

    readings = 0

    @classmethod
    def now(cls, tz=None):
        cls.readings += 1
        shift = timedelta(seconds=60 if cls.readings % 2 else 0)
        return datetime.now(tz) + shift


def test_windows_follow_the_database_clock_not_a_drifting_process_clock(key, monkeypatch):
    """Before: the instance ahead pruned the minute the lagging one still counted in,
    and 200 of 300 requests passed a limit of 100 a minute."""
    clock.set_fixed_now(None)
    monkeypatch.setattr(clock, "datetime", _DriftingDatetime)

    def burst() -> tuple[str, int]:
        fresh = credentials.create_key("org-1").id
        return fresh, sum(hit(fresh, DEFAULT).allowed for _ in range(300))

    fresh, allowed = in_one_minute(burst)
    assert allowed == 100
    assert counts(fresh)["minute"] == 100
