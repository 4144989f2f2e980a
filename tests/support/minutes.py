"""Bursts of rate-limited requests kept inside one window without waiting for the clock.

The rate-limit windows are the minutes of the database's clock. A test that must see a whole
burst counted in one window used to sleep until early in a minute (up to a minute), and still
guessed how long its burst would take. ``in_one_minute`` runs the burst and looks at the clock
before and after instead: a burst that straddled a minute boundary is run again, on fresh
counters (``burst`` makes its own key), which the next minute leaves room for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sowctl.storage.database import database_epoch

T = TypeVar("T")
ATTEMPTS = 3  # two straddles in a row need a burst of a minute or more


def in_one_minute(burst: Callable[[], T]) -> T:
    """``burst()``'s result from a run that began and ended in the same minute of the
    database's clock (this process must have the database open)."""
    for _ in range(ATTEMPTS):
        minute = database_epoch() // 60
        result = burst()
        if database_epoch() // 60 == minute:
            return result
    raise AssertionError(f"{ATTEMPTS} bursts in a row straddled a minute boundary")
