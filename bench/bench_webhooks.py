#!/usr/bin/env python3
"""Create throughput with webhook subscriptions against none: what deliveries cost requests.

    python bench/bench_webhooks.py                   # SQLite, 3 rounds of 5 s each side
    python bench/bench_webhooks.py --db postgresql://postgres@127.0.0.1:5432/sowctl_bench_hooks
    python bench/bench_webhooks.py --subscriptions 3 --rounds 3 --seconds 5

One ``sowctl serve`` (its production runner, ``--quiet``, one worker) on a small dataset: one
organization, one SOW, a bearer token. wrk POSTs task items to the SOW (``bench/post_items.lua``):
every request is a 201 that records an ``item.created`` event (a new SOW for each run: a SOW
holds a bounded number of items). The two sides run interleaved,
each round one after the other, the order reversed each round:

* **none**: no webhook subscription;
* **N subscriptions**: N subscriptions of the organization, each to its own receiver (a small
  HTTP server in a separate process answering 204), so each create makes N deliveries.

Before each side the deliveries of the previous one are waited for (every subscription's
``lastEventId`` at the newest event), so a side never pays for the other's backlog; after the
N-subscription side, how long the backlog took to drain is reported too (deliveries run beside
the requests, in each worker's dispatcher thread, and may lag behind a saturating load).

Reported per side: req/s (wrk), server CPU per request (``bench/cost.py``: the server's
processes, dispatcher included), and the ratio of the N-subscription side to none. Goal:
create throughput with 3 subscriptions at least 0.8 of none.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cost
import httpx

ROOT = Path(__file__).resolve().parent.parent
ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
ORG, USER, SOW = "org-bench", "user-bench", "sow-bench"
DATASET = {
    "organizations": [{"id": ORG, "name": "Bench"}],
    "users": [{"id": USER, "organizationId": ORG, "name": "Bench"}],
}
RECEIVER = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import threading

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass

servers = [ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(int(sys.argv[1]))]
print(" ".join(str(s.server_address[1]) for s in servers), flush=True)
for server in servers[1:]:
    threading.Thread(target=server.serve_forever, daemon=True).start()
servers[0].serve_forever()
"""


def start_server(db: str, counts: Path) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "sowctl", "--db", db, "serve", "--port", "0", "--quiet"]
    command += ["--admin-token", ADMIN_TOKEN]
    env = cost.environment(counts, {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")})
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Listening on "):
            return process, line.split()[-1]
    raise SystemExit("the server did not start")


def prepare(admin: httpx.Client) -> str:
    answer = admin.post("/_admin/dataset", params={"replace": "true"}, json=DATASET)
    answer.raise_for_status()
    token = admin.post("/_admin/tokens", json={"userId": USER, "organizationId": ORG, "role": "member"})
    token.raise_for_status()
    return token.json()["token"]


def new_sow(url: str, token: str, number: int) -> str:
    """A SOW of its own for each run: a SOW holds a bounded number of items."""
    sow = f"{SOW}-{number}"
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(f"{url}/api/sows", json={"id": sow, "title": "Bench"}, headers=headers)
    if created.status_code != 201:
        raise SystemExit(f"could not create the SOW: {created.status_code} {created.text}")
    return sow


def set_subscriptions(admin: httpx.Client, ports: list[int], count: int) -> None:
    for subscription in admin.get("/_admin/webhooks").json():
        admin.delete(f"/_admin/webhooks/{subscription['id']}").raise_for_status()
    for port in ports[:count]:
        body = {"url": f"http://127.0.0.1:{port}/hook", "organizationId": ORG, "eventTypes": ["item.created"]}
        admin.post("/_admin/webhooks", json=body).raise_for_status()


def drained(admin: httpx.Client, timeout: float = 600.0) -> float:
    """Seconds until every subscription has delivered the newest event."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        latest = _newest_event(admin)
        subscriptions = admin.get("/_admin/webhooks").json()
        if all(s["lastEventId"] == latest for s in subscriptions):
            return time.monotonic() - started
        time.sleep(0.25)
    raise SystemExit("the deliveries did not drain")


def _newest_event(admin: httpx.Client) -> str | None:
    """The newest event's id: ``since=latest`` answers it without reading any event."""
    return admin.get("/_admin/events", params={"limit": "1", "since": "latest"}).json()["lastEventId"]


def run_wrk(url: str, token: str, sow: str, seconds: int) -> float:
    script = str(Path(__file__).resolve().parent / "post_items.lua")
    command = ["wrk", "-t2", "-c8", f"-d{seconds}s", "-s", script, url, "--", sow, token]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if not match or "Non-2xx" in output:
        raise SystemExit(f"wrk failed:\n{output}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="A database URL or SQLite file (default: a temporary SQLite file)")
    parser.add_argument("--subscriptions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk on PATH (apt-get install -y wrk)")
    workdir = Path(tempfile.mkdtemp(prefix="sowctl-bench-hooks-"))
    db = args.db or str(workdir / "bench.db")
    counts = workdir / "counts"
    counts.mkdir()
    receivers = subprocess.Popen(
        [sys.executable, "-c", RECEIVER, str(args.subscriptions)], stdout=subprocess.PIPE, text=True
    )
    assert receivers.stdout is not None
    ports = [int(port) for port in receivers.stdout.readline().split()]
    server, url = start_server(db, counts)
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30)
    results: dict[int, list[tuple[float, float]]] = {0: [], args.subscriptions: []}
    drains: list[float] = []
    try:
        token = prepare(admin)
        meter = cost.Meter(server.pid, counts)
        for round_number in range(args.rounds):
            sides = [0, args.subscriptions] if round_number % 2 == 0 else [args.subscriptions, 0]
            for side in sides:
                set_subscriptions(admin, ports, side)
                before = meter.snapshot()
                sow = new_sow(url, token, 2 * round_number + (side > 0))
                rate = run_wrk(url, token, sow, args.seconds)
                after = meter.snapshot()
                requests = int(rate * args.seconds)
                if side:
                    drains.append(drained(admin))
                    after = meter.snapshot()  # the deliveries' CPU counts against their requests
                results[side].append((rate, meter.cost(before, after, requests).server_us))
                print(f"round {round_number + 1}, {side} subscriptions: {rate:,.0f} req/s", flush=True)
        report(results, args.subscriptions, drains)
    finally:
        admin.close()
        server.terminate()
        server.wait(timeout=20)
        receivers.terminate()
        shutil.rmtree(workdir, ignore_errors=True)


def report(results: dict[int, list[tuple[float, float]]], subscriptions: int, drains: list[float]) -> None:
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    none_rate = mean([rate for rate, _ in results[0]])
    some_rate = mean([rate for rate, _ in results[subscriptions]])
    none_cpu = mean([cpu for _, cpu in results[0]])
    some_cpu = mean([cpu for _, cpu in results[subscriptions]])
    print()
    print("| subscriptions | req/s | server CPU µs/req (deliveries included) | req/s vs none |")
    print("|---:|---:|---:|---:|")
    print(f"| 0 | {none_rate:,.0f} | {none_cpu:,.0f} | 1.00 |")
    print(f"| {subscriptions} | {some_rate:,.0f} | {some_cpu:,.0f} | {some_rate / none_rate:.2f} |")
    print()
    times = ", ".join(f"{seconds:.1f}" for seconds in drains)
    print(f"backlog drained after each {subscriptions}-subscription run in {times} s")
    print(json.dumps({"ratio": round(some_rate / none_rate, 3)}))


if __name__ == "__main__":
    main()
