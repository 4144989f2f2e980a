#!/usr/bin/env python3
"""What one member token can make a `sowctl serve` worker do with the chain report.

    python bench/bench_chain_bounds.py              # 2,000 duplicates, 10k-emoji titles; 40,000 deps x 8
    python bench/bench_chain_bounds.py --only amplify

Two cases, each on a fresh SQLite file served by ``sowctl serve --quiet`` (1 worker, 4 threads):

* ``amplify``: two items whose titles are 10,000 emoji each and 2,000 duplicate
  dependencies between them (critical, SLA date past, so each entry is also listed under
  ``issues.critical`` and ``issues.overdue``). One ``GET /api/dependencies/chain`` is read
  as a stream and thrown away; the worker's resident memory is read from
  ``/proc/PID/status`` before (VmRSS) and after (VmHWM, the peak).
* ``healthz``: one SOW of 40,000 dependencies (``gen_dataset.chain_heavy_sow``); 8 chain
  requests at once, each on its own connection, while ``/healthz`` is asked every 100 ms
  on another: the slowest and median ``/healthz`` answers, and how the chains were answered.

* ``encode`` (in process): a 50,000-dependency report (``chain_heavy_sow(10000, 50000)``,
  ``include=criticalPath``), flat and tree, written by ``json_bytes`` and by the streaming
  ``iter_json``; best of 5.

Data is inserted directly (``bench_graph.load``), as the importer would leave it.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_graph import load
from gen_dataset import ORG_ID, USER_ID, chain_heavy_sow
from served import Served

from sowctl.services import credentials
from sowctl.storage.database import open_database

MOMENT = "2026-01-01T00:00:00Z"


def amplified(titles: int, dups: int) -> dict:
    emoji = "\U0001f600" * titles
    items = [
        {
            "id": f"item-{n}",
            "sowId": "sow-amp",
            "parentItemId": None,
            "type": "task_item",
            "title": emoji,
            "description": None,
            "orderIndex": n,
            "status": "pending",
            "createdAt": MOMENT,
        }
        for n in (1, 2)
    ]
    deps = [
        {
            "id": f"dep-{n:05d}",
            "sourceItemId": "item-1",
            "targetItemId": "item-2",
            "dependencyType": "related_to",
            "riskLevel": "critical",
            "status": "active",
            "isExternal": False,
            "slaDate": "2020-01-01",
            "createdAt": MOMENT,
        }
        for n in range(dups)
    ]
    return {"sows": [{"id": "sow-amp"}], "items": items, "dependencies": deps}


def build(path: Path, data: dict) -> tuple[str, str]:
    database = open_database(str(path))
    try:
        sow_id = load(data)
        token = credentials.create_token(USER_ID, ORG_ID, "member").secret
    finally:
        database.close()
    return sow_id, token


def fetch(url: str, token: str, timeout: float = 120) -> tuple[int, int, float]:
    """(status, body bytes, seconds) of one request, the body read as a stream and dropped."""
    started = time.perf_counter()
    size = 0
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=timeout, headers=auth) as client, client.stream("GET", url) as response:
        for chunk in response.iter_raw():
            size += len(chunk)
    return response.status_code, size, time.perf_counter() - started


def amplify(titles: int, dups: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sow, token = build(Path(tmp) / "amp.db", amplified(titles, dups))
        served = Served(Path(tmp) / "amp.db")
        try:
            httpx.get(served.url + "/healthz", timeout=10)
            before = served.memory("VmRSS")
            status, size, seconds = fetch(f"{served.url}/api/dependencies/chain?sowId={sow}", token)
            peak = served.memory("VmHWM")
        finally:
            served.stop()
    print(
        f"amplify: {dups:,} duplicates, titles of {titles:,} emoji: HTTP {status}, {size / 1e6:,.1f} MB "
        f"in {seconds:.1f} s; worker RSS {before / 1024:,.0f} MiB before, peak {peak / 1024:,.0f} MiB"
    )


def healthz(deps: int, parallel: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sow, token = build(
            Path(tmp) / "big.db", chain_heavy_sow(deps // 4, deps, today=datetime.date.today())
        )
        served = Served(Path(tmp) / "big.db")
        try:
            url = f"{served.url}/api/dependencies/chain?sowId={sow}"
            fetch(url, token)  # warm: the worker's connection and caches
            results: list[tuple[int, int, float]] = []
            latencies: list[float] = []
            done = threading.Event()

            def chain() -> None:
                results.append(fetch(url, token))

            def probe() -> None:
                with httpx.Client(base_url=served.url, timeout=60) as client:
                    while not done.is_set():
                        started = time.perf_counter()
                        client.get("/healthz")
                        latencies.append(time.perf_counter() - started)
                        time.sleep(0.1)

            prober = threading.Thread(target=probe)
            prober.start()
            time.sleep(0.3)
            workers = [threading.Thread(target=chain) for _ in range(parallel)]
            started = time.perf_counter()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            elapsed = time.perf_counter() - started
            done.set()
            prober.join()
        finally:
            served.stop()
    statuses = sorted(str(status) for status, _, _ in results)
    answered = {s: statuses.count(s) for s in dict.fromkeys(statuses)}
    print(
        f"healthz: {deps:,} deps, {parallel} chains at once ({answered}, all done in {elapsed:.1f} s): "
        f"/healthz max {max(latencies) * 1000:,.0f} ms, median {statistics.median(latencies) * 1000:,.0f} ms "
        f"over {len(latencies)} probes"
    )


def encode() -> None:
    from sowctl.operations import call_local
    from sowctl.server.http import json_bytes
    from sowctl.server.streaming import iter_json
    from sowctl.services.access import Caller

    with tempfile.TemporaryDirectory() as tmp:
        database = open_database(str(Path(tmp) / "encode.db"))
        sow = load(chain_heavy_sow(10_000, 50_000, today=datetime.date.today()))
        for fmt in ("flat", "tree"):
            query = {"sowId": sow, "format": fmt, "include": "criticalPath"}
            body = call_local("chain.get", Caller.local(), query=query)
            whole, streamed = [], []
            for _ in range(5):
                started = time.perf_counter()
                size = len(json_bytes(body))
                whole.append(time.perf_counter() - started)
                started = time.perf_counter()
                assert sum(len(chunk) for chunk in iter_json(body)) == size
                streamed.append(time.perf_counter() - started)
            print(
                f"encode {fmt}: {size / 1e6:.1f} MB, json_bytes {min(whole) * 1000:.0f} ms, "
                f"iter_json {min(streamed) * 1000:.0f} ms (best of 5)"
            )
        database.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--titles", type=int, default=10_000)
    parser.add_argument("--dups", type=int, default=2_000)
    parser.add_argument("--deps", type=int, default=40_000)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--only", choices=("amplify", "healthz", "encode"))
    args = parser.parse_args()
    if args.only in (None, "amplify"):
        amplify(args.titles, args.dups)
    if args.only in (None, "healthz"):
        healthz(args.deps, args.parallel)
    if args.only in (None, "encode"):
        encode()


if __name__ == "__main__":
    main()
