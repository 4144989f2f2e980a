#!/usr/bin/env python3
"""What one token looping heavy writes does to another token's requests.

    python bench/bench_fairness.py                      # this tree
    python bench/bench_fairness.py --source DIR         # the sowctl package of another tree

A SQLite file with two SOWs of 5,000 items (``gen_dataset.big_dataset(2, 10000, 0)``) served by
``sowctl serve --quiet`` (1 worker, 4 threads). Caller B (its own token) reads an item 40 times
and creates 10 items, one request after another: first alone, then while caller A (another
token) runs 6 clients that each loop a reorder of every item of the other SOW (5,000 entries, a
long write). Printed: B's median and 90th percentile alone and under A's load, the ratio, and
how many reorders A finished. Ratios within one run only: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_dataset import ORG_ID, USER_ID, big_dataset

from sowctl.services import credentials
from sowctl.services.dataset import import_dataset
from sowctl.storage.database import open_database

LOOPERS = 6


def seed(path: Path) -> tuple[str, str, list[str], list[str]]:
    """Two tokens, and the item ids of each SOW."""
    dataset = big_dataset(2, 10_000, 0)
    database = open_database(str(path))
    try:
        import_dataset(dataset)
        a, b = (credentials.create_token(USER_ID, ORG_ID, "member").secret for _ in range(2))
    finally:
        database.close()
    by_sow: dict[str, list[str]] = {}
    for item in dataset["items"]:
        by_sow.setdefault(item["sowId"], []).append(item["id"])
    first, second = sorted(by_sow)
    return a, b, by_sow[first], by_sow[second]


def serve(db: Path, source: Path | None) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    command = [sys.executable, "-m", "sowctl", "--db", str(db), "serve", "--port", "0", "--quiet"]
    # From a neutral directory: ``python -m`` puts the working directory first on the path,
    # ahead of PYTHONPATH, so started from a tree it served that tree's package, not --source's.
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, text=True, env=env, cwd=tempfile.gettempdir(), **pipes)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Listening on "):
            return process, line.split()[-1]
    raise SystemExit("the server did not start")


def caller_b(url: str, token: str, sow: str, item: str) -> list[float]:
    """Seconds of each of B's 50 requests, sent one after another."""
    times = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
        for n in range(50):
            started = time.perf_counter()
            if n % 5 == 4:
                reply = client.post(f"/api/sow/{sow}/items", json={"title": f"b {n}", "type": "task_item"})
            else:
                reply = client.get(f"/api/items/{item}")
            times.append(time.perf_counter() - started)
            assert reply.status_code in (200, 201), reply.text
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="serve the sowctl package of this source tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "fair.db"
        a, b, a_items, b_items = seed(db)
        a_sow = "sow-bench-001"
        b_sow = "sow-bench-002"
        process, url = serve(db, args.source)
        try:
            caller_b(url, b, b_sow, b_items[0])  # warm-up
            alone = caller_b(url, b, b_sow, b_items[0])
            stop = threading.Event()
            done: list[int] = []
            body = {"items": [{"id": item, "orderIndex": n} for n, item in enumerate(reversed(a_items))]}

            def loop() -> None:
                with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {a}"}, timeout=300) as c:
                    while not stop.is_set():
                        done.append(c.put(f"/api/sow/{a_sow}/items/reorder", json=body).status_code)

            loopers = [threading.Thread(target=loop) for _ in range(LOOPERS)]
            for thread in loopers:
                thread.start()
            time.sleep(2)
            loaded = caller_b(url, b, b_sow, b_items[0])
            stop.set()
            for thread in loopers:
                thread.join()
        finally:
            process.terminate()
            process.wait(timeout=30)

    def ms(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=10)[q - 1] * 1000 if q < 10 else max(values) * 1000

    p50 = statistics.median(alone) * 1000, statistics.median(loaded) * 1000
    print(f"source: {args.source or 'this tree'}")
    print(f"B alone:         p50 {p50[0]:8.1f} ms  p90 {ms(alone, 9):8.1f} ms")
    ratio = p50[1] / p50[0]
    print(f"B under A's load: p50 {p50[1]:8.1f} ms  p90 {ms(loaded, 9):8.1f} ms  ({ratio:.1f}x p50)")
    print(f"A: {len(done)} reorders answered ({sorted(set(done))}) by {LOOPERS} clients")


if __name__ == "__main__":
    main()
