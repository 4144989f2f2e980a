"""Heavy requests in each worker's helper process (sowctl.engine.heavy), end to end: a real
``sowctl serve`` answers a heavy request exactly as it answers the same request in a thread."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sowctl.services import demo_data
from tests.support.server import Server, seed_demo

pytestmark = [pytest.mark.slow]

REORDER = f"/api/sow/{demo_data.DEMO_SOW}/items/reorder"
PADDING = " " * (80 * 1024)  # whitespace JSON allows: the body passes the 64 KiB of a heavy one


def _children(pid: int) -> set[int]:
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def _without_request_id(reply: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in reply.headers.items() if k not in ("x-request-id", "date", "content-length")}
    return reply.status_code, headers, reply.content.replace(b" ", b"")


def _item_ids(server: Server, headers: dict[str, str]) -> list[str]:
    page = server.client.get(f"/api/sow/{demo_data.DEMO_SOW}/items?limit=100", headers=headers)
    return [item["id"] for item in page.json()]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, dict[str, str]]]:
    db = tmp_path / "heavy.db"
    token, _ = seed_demo(str(db))
    server = Server(db)
    yield server, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    server.stop()


def test_a_heavy_reorder_answers_as_a_light_one_and_the_helper_is_a_process_of_the_worker(
    served: tuple[Server, dict[str, str]],
) -> None:
    server, headers = served
    ids = _item_ids(server, headers)
    order = {"items": [{"id": i, "orderIndex": n} for n, i in enumerate(reversed(ids))]}
    light = server.client.put(REORDER, content=json.dumps(order), headers=headers)
    back = {"items": [{"id": i, "orderIndex": n} for n, i in enumerate(ids)]}
    server.client.put(REORDER, content=json.dumps(back), headers=headers)
    heavy = server.client.put(REORDER, content=json.dumps(order) + PADDING, headers=headers)
    assert light.status_code == 200
    assert _without_request_id(heavy) == _without_request_id(light)
    assert _item_ids(server, headers) == list(reversed(ids))
    (worker,) = _children(server.process.pid)
    (zygote,) = _children(worker)
    assert len(_children(zygote)) == 1  # the helper, started with the worker


def test_a_heavy_request_refused_is_refused_in_the_same_words(served: tuple[Server, dict[str, str]]) -> None:
    server, headers = served
    bad = {"items": [{"id": "no-such-item", "orderIndex": 0}]}
    light = server.client.put(REORDER, content=json.dumps(bad), headers=headers)
    heavy = server.client.put(REORDER, content=json.dumps(bad) + PADDING, headers=headers)
    assert light.status_code >= 400
    assert _without_request_id(heavy) == _without_request_id(light)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is left


def test_no_process_outlives_a_killed_server(served: tuple[Server, dict[str, str]]) -> None:
    server, _ = served
    (worker,) = _children(server.process.pid)
    (zygote,) = _children(worker)
    (helper,) = _children(zygote)
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    # Each learns of its parent's death from the kernel (PR_SET_PDEATHSIG), in turn.
    deadline = time.monotonic() + 30
    while any(map(_alive, (worker, zygote, helper))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in (worker, zygote, helper) if _alive(pid)] == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_worker_s_helper_processes_end_on_the_signal_their_parent_s_death_sends(
    served: tuple[Server, dict[str, str]], sig: signal.Signals
) -> None:
    # A terminal that closes sends SIGHUP; a parent's death, SIGTERM (PR_SET_PDEATHSIG). The
    # HTTP server's own handlers, inherited through the fork, once kept them alive (and a
    # second signal inside the first's handler hung them for good).
    server, _ = served
    (worker,) = _children(server.process.pid)
    (zygote,) = _children(worker)
    (helper,) = _children(zygote)
    os.kill(helper, sig)
    os.kill(zygote, sig)
    deadline = time.monotonic() + 30
    while (_alive(helper) or _alive(zygote)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in (helper, zygote) if _alive(pid)] == []
