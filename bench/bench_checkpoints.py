#!/usr/bin/env python3
"""Per-test state for test suites: checkpoint restore against the alternatives, on 10,000 records.

    python bench/bench_checkpoints.py                 # SQLite file, 10,000 records, 15 runs each
    python bench/bench_checkpoints.py --db postgresql://postgres@127.0.0.1:5432/bench_ckpt

A real ``sowctl serve --admin`` on a free port; each measurement is one HTTP call to
the admin API, as the pytest plugin makes it before a test (``sowctl_service``):

* ``POST /_admin/checkpoints/NAME/restore``: the whole state back (what the plugin does);
* ``POST /_admin/dataset?replace=true``: reset and import the dataset again (the alternative);
* ``POST /_admin/checkpoints``: saving the checkpoint (once per dataset and session).

Measurements are interleaved, medians reported; the ratio restore / replace is what
matters (absolute times depend on the machine). Target: restore under 200 ms on SQLite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_dataset import big_dataset


def start(db: str) -> tuple[subprocess.Popen[str], str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    command = [sys.executable, "-m", "sowctl", "--db", db, "serve", "--port", "0", "--quiet", "--admin"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    token = url = ""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Admin token: "):
            token = line.split(": ", 1)[1].strip()
        if line.startswith("Listening on "):
            url = line.split()[-1]
            break
    return process, url, token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a new SQLite file)")
    parser.add_argument("--items", type=int, default=7000)
    parser.add_argument("--deps", type=int, default=2900)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    data = big_dataset(5, args.items, args.deps)
    records = sum(len(rows) for rows in data.values())
    body = json.dumps(data).encode()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "bench.db")
        process, url, token = start(db)
        try:
            admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
            json_headers = {"Content-Type": "application/json"}
            admin.post("/_admin/dataset", params={"replace": "true"}, content=body, headers=json_headers)
            times: dict[str, list[float]] = {"restore": [], "replace": [], "save": []}
            for _ in range(args.runs):
                for name, call in (
                    ("save", lambda: admin.post("/_admin/checkpoints", json={"name": "bench"})),
                    ("restore", lambda: admin.post("/_admin/checkpoints/bench/restore")),
                    (
                        "replace",
                        lambda: admin.post(
                            "/_admin/dataset", params={"replace": "true"}, content=body, headers=json_headers
                        ),
                    ),
                ):
                    started = time.perf_counter()
                    response = call()
                    times[name].append((time.perf_counter() - started) * 1000)
                    response.raise_for_status()
        finally:
            process.terminate()
            process.wait(timeout=30)
    medians = {name: statistics.median(values) for name, values in times.items()}
    backend = "PostgreSQL" if (args.db or "").startswith("postgres") else "SQLite (WAL)"
    print(
        f"{records:,} records ({args.items:,} items, {args.deps:,} dependencies), {backend}, {args.runs} runs"
    )
    print(
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    )
    for name, label in (
        ("restore", "POST /_admin/checkpoints/NAME/restore"),
        ("replace", "POST /_admin/dataset?replace=true"),
        ("save", "POST /_admin/checkpoints"),
    ):
        values = sorted(times[name])
        p90 = values[int(len(values) * 0.9) - 1]
        print(f"| {label} | {medians[name]:.1f} ms | {p90:.1f} ms |")
    print(f"restore / replace: {medians['restore'] / medians['replace']:.3f}")


if __name__ == "__main__":
    main()
