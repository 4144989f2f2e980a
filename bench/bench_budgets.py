#!/usr/bin/env python3
"""What one request or one file costs when it is refused by a budget (sowctl/foundation/budgets.py).

    python bench/bench_budgets.py                   # this checkout
    python bench/bench_budgets.py --code ../main    # another checkout, for the figures before

Requests: ``sowctl serve --quiet`` (1 worker) on a fresh SQLite file with the demo dataset
answers, one at a time, a purchase order of 250,000 empty line items (0.75 MB), a reorder of
10,000 entries that are all wrong, and a Group A body nested 300,000 deep (0.6 MB). For each:
the status, the size of the answer, the wall time, the worker's CPU time (/proc/PID/stat) and
how much its peak resident memory (VmHWM) grew.

Files: ``sowctl import`` of datasets whose one description is nested 20,000 (40 KB), 40,000
(80 KB) and 1,000,000 (2 MB) arrays deep, each in a child process whose address space is capped
(``--cap-gib``, so that code which would take 10 GB fails with MemoryError instead); printed:
exit code, first line of stderr, wall time and peak resident memory (VmHWM), next to a small
valid import's peak. Then the nesting scan alone (``json_input.check_depth``) against
``json.loads`` on a dataset of ``bench/gen_dataset.big_dataset(10, 40000, 40000)`` (21 MB).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_dataset

ORG, COMPANY = "org-acme", "comp-acme-llc"
CHILD = """
import sys
from sowctl.cli import main
try:
    sys.exit(main())
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\nmaxrss={peak}\\n")
"""


def environment(code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def seed(db: Path, code: Path | None) -> tuple[str, str]:
    """Demo data in ``db`` (with the sowctl of ``code``); an API key and a member token."""
    script = f"""
import datetime
from sowctl.services import demo_data
from sowctl.storage.database import open_database
from sowctl.services import credentials
from sowctl.services.dataset import import_dataset
database = open_database({str(db)!r})
import_dataset(demo_data.demo_dataset(datetime.date(2026, 1, 1)))
print(credentials.create_key({ORG!r}).secret)
print(credentials.create_token(demo_data.DEMO_USER, {ORG!r}).secret)
database.close()
"""
    out = subprocess.run(
        [sys.executable, "-c", script], env=environment(code), capture_output=True, text=True, check=True
    )
    key, token = out.stdout.split()
    return key, token


class Worker:
    """``sowctl serve`` with one worker, and that worker's /proc figures."""

    def __init__(self, db: Path, code: Path | None) -> None:
        command = [sys.executable, "-m", "sowctl", "--db", str(db), "serve", "--port", "0", "--quiet"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment(code)
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("Listening on "):
                self.url = line.split()[-1]
                break
        deadline = time.monotonic() + 10
        while not self._children() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.pid = self._children()[0]

    def _children(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()] if path.exists() else []

    def peak_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise KeyError("VmHWM")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def requests(code: Path | None) -> None:
    po = {
        "project_id": "101",
        "commitment_id": "5001",
        "title": "Bomb",
        "vendor_id": 7,
        "status": "draft",
        "line_items": [{}] * 250_000,
    }
    cases = [
        (
            "purchase order, 250,000 empty line items",
            "POST",
            "/api/external/create-purchase-order",
            json.dumps(po, separators=(",", ":")),
            "key",
        ),
        (
            "reorder, 10,000 entries all wrong",
            "PUT",
            "/api/sow/sow-tower-a-ph1/items/reorder",
            json.dumps({"items": [{}] * 10_000}),
            "token",
        ),
        (
            "item create, a field nested 300,000 deep",
            "POST",
            "/api/sow/sow-tower-a-ph1/items",
            '{"title": "t", "type": "task_item", "x": ' + nested(300_000) + "}",
            "token",
        ),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "budgets.db"
        key, token = seed(db, code)
        worker = Worker(db, code)
        auth = {
            "key": {"x-api-key": key, "organization-id": ORG, "company-id": COMPANY},
            "token": {"Authorization": f"Bearer {token}"},
        }
        try:
            with httpx.Client(timeout=300) as client:
                client.get(worker.url + "/healthz")
                for label, method, path, body, who in cases:
                    peak, cpu, started = worker.peak_kib(), worker.cpu_seconds(), time.perf_counter()
                    headers = {**auth[who], "Content-Type": "application/json"}
                    answer = client.request(method, worker.url + path, content=body.encode(), headers=headers)
                    wall = time.perf_counter() - started
                    print(
                        f"{label} ({len(body) / 1e6:.2f} MB): HTTP {answer.status_code}, answer "
                        f"{len(answer.content):,} bytes, {wall:.2f} s wall, "
                        f"{worker.cpu_seconds() - cpu:.2f} s worker CPU, "
                        f"peak +{(worker.peak_kib() - peak) / 1024:,.0f} MiB"
                    )
                    print(f"    {answer.text[:160]}")
        finally:
            worker.stop()


def run_import(dataset: Path, db: Path, code: Path | None, cap: int) -> tuple[int, str, float, int]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    command = [sys.executable, "-c", CHILD, "--db", str(db), "import", "--json", str(dataset)]
    started = time.perf_counter()
    done = subprocess.run(
        command, env=environment(code), capture_output=True, text=True, timeout=600, preexec_fn=limit
    )
    wall = time.perf_counter() - started
    stderr, _, peak = done.stderr.rpartition("maxrss=")
    first = stderr.strip().splitlines()[0] if stderr.strip() else ""
    return done.returncode, first.replace(str(dataset), "FILE"), wall, int(peak.split()[0])


def imports(code: Path | None, cap: int, levels: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.json"
        small.write_text(json.dumps(gen_dataset.big_dataset(1, 10, 10)))
        _, _, _, baseline = run_import(small, Path(tmp) / "small.db", code, cap)
        print(f"a small valid import: peak {baseline / 1024:,.0f} MiB")
        item = {"id": "i-1", "sowId": "s", "title": "t", "type": "task_item", "description": "DEEP"}
        for depth in levels:
            deep = Path(tmp) / f"deep-{depth}.json"
            deep.write_text(json.dumps({"items": [item]}).replace('"DEEP"', nested(depth)))
            code_, first, wall, peak = run_import(deep, Path(tmp) / f"deep-{depth}.db", code, cap)
            print(
                f"{depth:,} levels ({deep.stat().st_size / 1e3:,.0f} KB): exit {code_}, {wall:.2f} s, "
                f"peak {peak / 1024:,.0f} MiB: {first[:150]}"
            )


def scan() -> None:
    from sowctl.foundation import json_input

    data = json.dumps(gen_dataset.big_dataset(10, 40_000, 40_000), separators=(",", ":")).encode()
    best = {}
    for name, run in (("check_depth", json_input.check_depth), ("json.loads", json.loads)):
        times = []
        for _ in range(3):
            started = time.process_time()
            run(data)
            times.append(time.process_time() - started)
        best[name] = min(times)
    mib = len(data) / 2**20
    print(
        f"{len(data) / 1e6:.1f} MB dataset: check_depth {best['check_depth']:.3f} s CPU "
        f"({best['check_depth'] / mib * 1000:.1f} ms/MiB), json.loads {best['json.loads']:.3f} s CPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, help="a sowctl checkout to measure instead of this one")
    parser.add_argument("--cap-gib", type=float, default=4.0, help="address space of each import child")
    parser.add_argument("--levels", default="20000,40000,1000000", help="nesting depths of the files")
    args = parser.parse_args()
    code = args.code.resolve() if args.code else None
    print(f"{datetime.date.today()}, code: {code or 'this checkout'}")
    requests(code)
    imports(code, int(args.cap_gib * 2**30), [int(n) for n in args.levels.split(",")])
    if code is None:
        scan()


if __name__ == "__main__":
    main()
