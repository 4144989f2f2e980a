#!/usr/bin/env python3
"""Latency of ordinary requests to ``sowctl serve`` while slow or idle clients hold sockets.

    python bench/bench_slow_clients.py                      # this checkout, every scenario
    python bench/bench_slow_clients.py --compare ../main    # also another source tree, same run
    python bench/bench_slow_clients.py --write bench/WSGI_SERVERS.md

Each server is a real ``sowctl serve --demo --quiet`` with default options otherwise (one
worker, four threads) on a fresh SQLite file. For each scenario the attacking sockets are
opened first, then four client threads send ordinary requests for ``--duration`` seconds,
alternating ``GET /healthz`` and an authenticated ``GET /api/items/ID``, each on a
keep-alive connection; a request that takes longer than ``--request-timeout`` counts as an
error and as that many seconds. Scenarios:

* baseline: no attacker;
* 4 or N slow headers: sockets that sent a request line and add one header byte a second;
* N idle: N connected sockets that send nothing;
* 4 stalled bodies: four POSTs announcing a 2 MiB body that never comes.

``--compare DIR`` runs the same scenarios, interleaved, against the ``sowctl`` package in
DIR (e.g. a worktree of the previous commit), so both columns come from one run on the
same machine load. Every attacker and server is bounded and stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SECTION = "### Measured: ordinary requests while slow or idle clients hold sockets"
CLIENT_THREADS = 4


@dataclass
class Result:
    source: str
    scenario: str
    requests: int
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float


class Server:
    """``sowctl serve --demo --quiet --port 0`` from ``source`` (None: this checkout)."""

    def __init__(self, db: Path, source: Path | None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
        if source is not None:  # `python -m` puts the working directory first on sys.path
            env["PYTHONPATH"] = str(source)
        command = [
            sys.executable,
            "-m",
            "sowctl",
            "--db",
            str(db),
            "serve",
            "--port",
            "0",
            "--demo",
            "--quiet",
        ]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=source or ROOT,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "API key:" in line:
                break
        text = "".join(lines)
        url = re.search(r"Listening on (\S+)", text)
        token = re.search(r"token:\s+(\S+)", text)
        if not url or not token:
            self.stop()
            raise RuntimeError(f"server did not start: {text}")
        self.url, self.token = url[1], token[1]
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))
        with httpx.Client(base_url=self.url, timeout=30) as client:
            items = client.get("/api/sow/sow-tower-a-ph1/items", headers=self.auth)
            items.raise_for_status()
            self.item_id = items.json()[0]["id"]

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


# --- attackers ------------------------------------------------------------------------------------


@contextlib.contextmanager
def attack(server: Server, scenario: str) -> Iterator[None]:
    """Hold the scenario's sockets open (and trickling) until the block ends."""
    sockets: list[socket.socket] = []
    stop = threading.Event()
    count = int(scenario.split()[0]) if scenario[0].isdigit() else 0
    try:
        for _ in range(count):
            sock = socket.create_connection(server.address, timeout=5)
            sockets.append(sock)
            if "slow headers" in scenario:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            elif "stalled bodies" in scenario:
                sock.sendall(
                    b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 2097152\r\n\r\n"
                )

        def trickle() -> None:
            while not stop.wait(1.0):
                for sock in sockets:
                    with contextlib.suppress(OSError):
                        sock.send(b"X")

        if "slow headers" in scenario:
            threading.Thread(target=trickle, daemon=True).start()
        time.sleep(0.5)
        yield
    finally:
        stop.set()
        for sock in sockets:
            sock.close()


def ordinary_load(server: Server, duration: float, request_timeout: float) -> tuple[list[float], int]:
    """Latencies (s) of ordinary requests from CLIENT_THREADS threads, and the error count."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    end = time.monotonic() + duration

    def client_loop() -> None:
        nonlocal errors
        paths = ["/healthz", f"/api/items/{server.item_id}"]
        with httpx.Client(base_url=server.url, timeout=request_timeout, headers=server.auth) as client:
            n = 0
            while time.monotonic() < end:
                started = time.perf_counter()
                try:
                    ok = client.get(paths[n % 2]).status_code == 200
                except httpx.HTTPError:
                    ok = False
                elapsed = time.perf_counter() - started
                n += 1
                with lock:
                    latencies.append(elapsed if ok else max(elapsed, request_timeout))
                    errors += 0 if ok else 1

    threads = [threading.Thread(target=client_loop) for _ in range(CLIENT_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors


def measure(source_name: str, server: Server, scenario: str, ns: argparse.Namespace) -> Result:
    with attack(server, scenario):
        latencies, errors = ordinary_load(server, ns.duration, ns.request_timeout)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else float("nan")
    result = Result(
        source_name,
        scenario,
        len(latencies),
        errors,
        statistics.median(latencies) * 1000 if latencies else float("nan"),
        p99 * 1000,
        (latencies[-1] if latencies else float("nan")) * 1000,
    )
    print(
        f"# {source_name:8} {scenario:22} {result.requests:6} requests  errors {errors:4}  "
        f"p50 {result.p50_ms:8.1f} ms  p99 {result.p99_ms:8.1f} ms  max {result.max_ms:8.1f} ms",
        file=sys.stderr,
        flush=True,
    )
    return result


def table(results: list[Result]) -> str:
    lines = [
        "| server | scenario | requests | errors (timeouts) | p50 ms | p99 ms | max ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.source} | {r.scenario} | {r.requests:,} | {r.errors:,} | {r.p50_ms:.1f} | "
            f"{r.p99_ms:.1f} | {r.max_ms:.1f} |"
        )
    return "\n".join(lines)


def write_section(path: Path, text: str) -> None:
    spec = importlib.util.spec_from_file_location("bench_throughput", ROOT / "bench" / "bench_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    module.SECTION = SECTION
    module.write_section(path, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=200, help="slow or idle sockets per scenario")
    parser.add_argument(
        "--duration", type=float, default=5.0, help="seconds of ordinary requests per scenario"
    )
    parser.add_argument("--request-timeout", type=float, default=10.0)
    parser.add_argument("--compare", type=Path, help="also measure the sowctl package in this source tree")
    parser.add_argument("--write", type=Path, help="record the table in this markdown file")
    ns = parser.parse_args()
    scenarios = [
        "baseline",
        "4 slow headers",
        f"{ns.sockets} slow headers",
        f"{ns.sockets} idle",
        "4 stalled bodies",
    ]
    sources: list[tuple[str, Path | None]] = [("this", None)]
    if ns.compare:
        sources.append(("compared", ns.compare.resolve()))
    load_before = os.getloadavg()[0]
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in scenarios:
            for name, source in sources:  # interleaved: both see the same machine load
                # A fresh server per measurement: a scenario must not inherit the last one's sockets.
                server = Server(Path(tmp) / f"{name}-{len(results)}.db", source)
                try:
                    results.append(measure(name, server, scenario, ns))
                finally:
                    server.stop()
    command = "python bench/bench_slow_clients.py " + " ".join(sys.argv[1:])
    header = (
        f"`{command.strip()}` ({date.today().isoformat()}; {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; `sowctl serve --demo --quiet`, "
        f"default options; {CLIENT_THREADS} client threads for {ns.duration:g} s per scenario, "
        f"requests timing out after {ns.request_timeout:g} s; 1-minute load average {load_before:.1f} "
        f"before, {os.getloadavg()[0]:.1f} after)."
    )
    if ns.compare:
        header += f' "compared" is the package in `{ns.compare}`.'
    text = table(results)
    print(header + "\n\n" + text)
    if ns.write:
        write_section(ns.write, f"{SECTION}\n\n{header}\n\n{text}\n")


if __name__ == "__main__":
    main()
