#!/usr/bin/env python3
"""What one caller's processor-bound requests do to another caller's, per engine setting.

    python bench/bench_cpu_share.py                 # every variant, interleaved
    python bench/bench_cpu_share.py --rounds 2

A SQLite file with one SOW of 10,000 items and 40,000 dependencies (its chain report costs
about a second of processor time) and a small one. Caller B (its own token) reads one item
150 times, one request after another: alone, then while caller A (another token) keeps four
chain reports of the large SOW running. Each variant is a server (1 worker, 4 threads)
with a processor share per caller on or off and Python's switch interval at 5 ms (its
default) or shorter. Printed: B's p50/p99 alone and under A's load, their ratios, and A's
reports answered. Ratios within one run only: the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_dataset import ORG_ID, USER_ID, big_dataset

VARIANTS = {  # name: (cpu_share, switch interval in seconds or None)
    "no share, 5 ms switch": (0.0, None),
    "share 0.5, 5 ms switch": (0.5, None),
    "no share, 1 ms switch": (0.0, 0.001),
    "share 0.5, 1 ms switch": (0.5, 0.001),
    "share 0.5, 0.5 ms switch": (0.5, 0.0005),
}
LOOPERS = 4


def seed(path: Path) -> tuple[str, str, str]:
    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset
    from sowctl.storage.database import open_database

    dataset = big_dataset(2, 20_000, 80_000)
    database = open_database(str(path))
    try:
        import_dataset(dataset)
        a, b = (credentials.create_token(USER_ID, ORG_ID, "member").secret for _ in range(2))
    finally:
        database.close()
    parents = {i.get("parentItemId") for i in dataset["items"]}
    item = next(
        i["id"] for i in dataset["items"] if i["sowId"] == "sow-bench-002" and i["id"] not in parents
    )  # a leaf: its read costs the same whatever the hierarchy
    return a, b, item


def run_server(db: str, share: float, switch: float | None) -> None:
    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings
    from sowctl.server.runner import serve

    settings = ServerSettings(
        access_log=False,
        cpu_share=share,
        report_slots=3,
        write_slots=3,
        switch_interval=switch or sys.getswitchinterval(),
    )
    serve(
        partial(create_app, db, settings),
        port=0,
        threads=4,
        on_ready=lambda url: print(f"Listening on {url}", flush=True),
        access_log=False,
        settings=settings,
    )


def start(db: Path, share: float, switch: float | None) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, __file__, "--serve", str(db), str(share), str(switch or 0)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Listening on "):
            return process, line.split()[-1]
    raise SystemExit("the server did not start")


def caller_b(url: str, token: str, item: str, count: int = 150) -> list[float]:
    times = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
        for _ in range(count):
            started = time.perf_counter()
            reply = client.get(f"/api/items/{item}")
            times.append(time.perf_counter() - started)
            assert reply.status_code == 200, reply.text
    return times


def measure(db: Path, a: str, b: str, item: str, share: float, switch: float | None) -> dict[str, float]:
    process, url = start(db, share, switch)
    try:
        caller_b(url, b, item, 30)  # warm-up
        alone = caller_b(url, b, item)
        stop = threading.Event()
        done: list[int] = []

        def loop() -> None:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {a}"}, timeout=300) as c:
                while not stop.is_set():
                    reply = c.get("/api/dependencies/chain", params={"sowId": "sow-bench-001"})
                    done.append(reply.status_code)

        loopers = [threading.Thread(target=loop) for _ in range(LOOPERS)]
        for thread in loopers:
            thread.start()
        time.sleep(3)
        loaded = caller_b(url, b, item)
        stop.set()
        for thread in loopers:
            thread.join()
    finally:
        process.terminate()
        process.wait(timeout=30)

    def p99(values: list[float]) -> float:
        return statistics.quantiles(values, n=100)[98] * 1000

    return {
        "alone p50": statistics.median(alone) * 1000,
        "alone p99": p99(alone),
        "loaded p50": statistics.median(loaded) * 1000,
        "loaded p99": p99(loaded),
        "reports": sum(1 for status in done if status == 200),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        db, share, switch = args.serve
        run_server(db, float(share), float(switch) or None)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "share.db"
        a, b, item = seed(db)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
        for _ in range(args.rounds):
            for name, (share, switch) in VARIANTS.items():
                results[name].append(measure(db, a, b, item, share, switch))
    print("| variant | B alone p50 / p99 ms | B under A p50 / p99 ms | p99 ratio | A's reports |")
    print("|---|---:|---:|---:|---:|")
    for name, runs in results.items():
        mean = {key: statistics.mean(run[key] for run in runs) for key in runs[0]}
        print(
            f"| {name} | {mean['alone p50']:.1f} / {mean['alone p99']:.1f} | "
            f"{mean['loaded p50']:.1f} / {mean['loaded p99']:.1f} | "
            f"{mean['loaded p99'] / mean['alone p99']:.1f}x | {mean['reports']:.0f} |"
        )


if __name__ == "__main__":
    main()
