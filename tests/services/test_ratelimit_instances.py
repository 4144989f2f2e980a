"""Two ``sowctl serve`` instances on one database whose clocks are 40 s apart count one
rate limit together (the windows follow the database's clock).

Before: the instance ahead counted in the next minute while the other still counted in
this one, and together they accepted twice the limit (201 requests against 100 a minute).
Each server's process clock is shifted by a ``sitecustomize`` module on its PYTHONPATH.
"""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from sowctl import demo_data
from sowctl.db import database_epoch, open_database
from tests.support.server import Server, seed_demo

LIMIT = 20
SHIFT = 40  # seconds the second instance's clock is ahead

SHIFTED_CLOCK = textwrap.dedent(
    """
    import os
    from datetime import datetime, timedelta

    _shift = timedelta(seconds=float(os.environ["SOWCTL_TEST_CLOCK_SHIFT"]))

    class _Shifted(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) + _shift

    import sowctl.clock

    sowctl.clock.datetime = _Shifted
    """
)


def _wait_for_straddle(db_url: str) -> None:
    """Until the database's second of the minute is in [20, 50]: the shifted clock then
    reads the next minute, and the requests (a second or two) end within this one."""
    database = open_database(db_url)
    try:
        while not 20 <= database_epoch() % 60 <= 50:
            time.sleep(0.5)
    finally:
        database.close()


@pytest.mark.slow  # waits up to 30 s for the right second of the minute
def test_two_instances_with_clocks_40_s_apart_count_one_limit(db_url: str, tmp_path: Path) -> None:
    token, key = seed_demo(db_url)
    del token
    (tmp_path / "shifted").mkdir()
    (tmp_path / "shifted" / "sitecustomize.py").write_text(SHIFTED_CLOCK)
    args = ("--rate-per-minute", str(LIMIT), "--rate-per-day", "100000")
    servers = [
        Server(db_url, *args),
        Server(
            db_url,
            *args,
            env={"PYTHONPATH": str(tmp_path / "shifted"), "SOWCTL_TEST_CLOCK_SHIFT": str(SHIFT)},
        ),
    ]
    headers = {"x-api-key": key, "organization-id": demo_data.DEMO_ORG, "company-id": demo_data.DEMO_COMPANY}
    path = f"/api/external/purchase-order-options?project_id={demo_data.DEMO_PROJECT_ID}"
    accepted: list[int] = []
    try:
        _wait_for_straddle(db_url)

        def send(server: Server) -> None:
            with httpx.Client(base_url=server.url, timeout=30, headers=headers) as client:
                for _ in range(LIMIT):
                    reply = client.get(path)
                    assert reply.status_code in (200, 429), reply.text
                    accepted.append(reply.status_code == 200)

        threads = [threading.Thread(target=send, args=(server,)) for server in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for server in servers:
            server.stop()
    assert len(accepted) == 2 * LIMIT
    assert sum(accepted) == LIMIT
