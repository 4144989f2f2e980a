"""Two ``sowctl serve`` instances on one database whose clocks are a minute apart count one
rate limit together (the windows follow the database's clock).

Before: the instance ahead counted in the next minute while the other still counted in
this one, and together they accepted twice the limit (201 requests against 100 a minute).
Each server's process clock is shifted by a ``sitecustomize`` module on its PYTHONPATH; a
shift of exactly a minute puts the instance ahead in the next minute whatever the second,
so the test need not wait for a particular second of the minute.
"""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import httpx
import pytest

from sowctl.services import credentials, demo_data
from sowctl.storage.database import open_database
from tests.support.minutes import in_one_minute
from tests.support.server import Server, seed_demo

LIMIT = 20
SHIFT = 60  # seconds the second instance's clock is ahead: always the next minute

SHIFTED_CLOCK = textwrap.dedent(
    """
    import os
    from datetime import datetime, timedelta

    _shift = timedelta(seconds=float(os.environ["SOWCTL_TEST_CLOCK_SHIFT"]))

    class _Shifted(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) + _shift

    import sowctl.foundation.clock

    sowctl.foundation.clock.datetime = _Shifted
    """
)


@pytest.mark.slow  # two servers in subprocesses
def test_two_instances_with_clocks_a_minute_apart_count_one_limit(db_url: str, tmp_path: Path) -> None:
    seed_demo(db_url)
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
    path = f"/api/external/purchase-order-options?project_id={demo_data.DEMO_PROJECT_ID}"

    def burst() -> list[bool]:
        """LIMIT requests to each instance at once, with a new key: which were accepted."""
        key = credentials.create_key(demo_data.DEMO_ORG).secret
        headers = {
            "x-api-key": key,
            "organization-id": demo_data.DEMO_ORG,
            "company-id": demo_data.DEMO_COMPANY,
        }
        accepted: list[bool] = []

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
        return accepted

    database = open_database(db_url)
    try:
        accepted = in_one_minute(burst)
    finally:
        database.close()
        for server in servers:
            server.stop()
    assert len(accepted) == 2 * LIMIT
    assert sum(accepted) == LIMIT
