#!/usr/bin/env python3
"""A page of 100 items from ``sowctl serve`` and from datasette, side by side in one run.

    pip install -e '.[bench]'                 # datasette, the peer (or --datasette PATH)
    python bench/bench_list_pages.py           # pages 1, 25 and 50 of a 5,000-item SOW
    python bench/bench_list_pages.py --write BENCHMARKS.md

Data: the throughput benchmark's dataset (``bench_throughput.sqlite_template``: 20 SOWs
of 5,000 items). sowctl serves a fresh copy with ``serve --workers 2`` settings
(gunicorn gthread, 4 threads per worker, ``--quiet``) and answers
``GET /api/sow/{sowId}/items?page=P&limit=100`` with a bearer token; hello world (a bare
Bottle route in the same workers) is its floor. datasette serves another copy of the
same file to which a table ``items`` was added: the same rows with the API's camelCase
column names, inserted in the API's list order, with an index on ``(sowId,
orderIndex)``, so ``items.json?sowId=S&_sort=orderIndex&_size=100`` returns the same
100 items for each page (its deep pages by its keyset ``_next`` token, walked once
beforehand). datasette runs as it is documented to run, one process, with facet
suggestions off (``--setting suggest_facets off``), as for an API client.

Each request is measured with ``wrk -t2 -c32 --latency`` on loopback, the measurements
interleaved (sowctl page, datasette page, for every page, twice) and averaged, so that a
change in the machine's load hits both sides alike; every figure is a ratio within
this one run. The servers' CPU time per request (user + system of all their processes,
from /proc) is recorded too: on a shared machine it moves far less than requests per
second do.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import ModuleType

import cost

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## List pages against datasette"
SOW = "sow-bench-001"
LIMIT = 100


def _throughput() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_throughput", ROOT / "bench" / "bench_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_throughput"] = module
    spec.loader.exec_module(module)
    return module


PEER_TABLE = """
CREATE TABLE items AS
SELECT id, title, description, type, sow_id AS sowId, parent_id AS parentItemId,
       order_index AS orderIndex, status, created_at AS createdAt, updated_at AS updatedAt,
       created_by_user_id AS createdByUserId
FROM item ORDER BY sow_id, order_index, created_at, id
"""


# Facet suggestions (on by default) run a query per column on every first page: an API
# client turns them off, and so does this benchmark.
PEER_SETTINGS = ["--setting", "suggest_facets", "off"]


def peer_copy(template: str, target: Path) -> None:
    shutil.copyfile(template, target)
    with sqlite3.connect(target) as raw:
        raw.execute(PEER_TABLE)
        raw.execute("CREATE INDEX items_sow_order ON items (sowId, orderIndex)")
        raw.execute("ANALYZE")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Datasette:
    def __init__(self, command: list[str], path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.counts = tempfile.TemporaryDirectory()
        self.process = subprocess.Popen(
            [*command, "serve", str(path), "--port", str(self.port), "--host", "127.0.0.1", *PEER_SETTINGS],
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
            env=cost.environment(Path(self.counts.name)),
        )
        self.meter = cost.Meter(self.process.pid, Path(self.counts.name))
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/-/versions.json", timeout=2).read()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.log.seek(0)
                    raise RuntimeError(
                        "datasette did not start: " + self.log.read().decode()[-2000:]
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(10)
        self.log.close()
        self.counts.cleanup()


def datasette_command(given: str | None) -> list[str]:
    if given:
        return [given]
    if importlib.util.find_spec("datasette") is not None:
        return [sys.executable, "-m", "datasette"]
    found = shutil.which("datasette")
    if found:
        return [found]
    raise SystemExit("datasette is not installed: pip install -e '.[bench]' or pass --datasette PATH")


def get_json(url: str, headers: dict[str, str] | None = None) -> tuple[dict | list, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as response:
        # Header names in lower case: granian sends them so, header names being case-blind.
        return json.loads(response.read()), {name.lower(): value for name, value in response.headers.items()}


def peer_paths(base: str, pages: list[int]) -> dict[int, str]:
    """datasette's path of each page, following its ``next`` tokens from the first."""
    first = f"/bench/items.json?sowId={SOW}&_sort=orderIndex&_size={LIMIT}"
    paths, path, page = {}, first, 1
    while page <= max(pages):
        if page in pages:
            paths[page] = path
        body, _ = get_json(base + path)
        token = body.get("next")
        if not token:
            break
        path = first + f"&_next={token}"
        page += 1
    return paths


def same_pages(ours: str, token: str, peer: str, peer_path: dict[int, str]) -> None:
    """Both sides answer each page with the same items, in the same order."""
    for page, path in peer_path.items():
        mine, headers = get_json(
            f"{ours}/api/sow/{SOW}/items?page={page}&limit={LIMIT}", {"Authorization": f"Bearer {token}"}
        )
        theirs, _ = get_json(peer + path)
        id_column = theirs["columns"].index("id")
        if [item["id"] for item in mine] != [row[id_column] for row in theirs["rows"]]:
            raise SystemExit(f"page {page}: sowctl and datasette disagree on the items")
        if headers.get("x-total-count") != str(theirs.get("filtered_table_rows_count")):
            total = theirs.get("filtered_table_rows_count")
            raise SystemExit(f"page {page}: total {headers.get('x-total-count')} against {total}")


@dataclass
class Row:
    label: str
    rps: list[float]
    p50: list[float]
    cpu_ms: list[float]  # server CPU per request
    statements: list[float]  # statements SQLite ran per request (its trace, in the server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="1,25,50")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds, averaged")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--datasette", help="the datasette executable (default: the bench extra)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sowctl-bench",
    )
    parser.add_argument("--write", type=Path, help="record the table in this markdown file")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install -y wrk)")
    bench = _throughput()
    pages = [int(p) for p in args.pages.split(",")]
    peer_cmd = datasette_command(args.datasette)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        template = str(bench.sqlite_template(args.cache_dir))
        db_url = bench.fresh_copy("sqlite", template, "", workdir)
        targets = bench.prepare_run(db_url, workdir)
        peer_file = workdir / "bench.db"
        peer_copy(template, peer_file)
        server = bench.Server(db_url, args.workers)
        peer = None
        try:
            peer = Datasette(peer_cmd, peer_file)
            paths = peer_paths(peer.url, pages)
            same_pages(server.url, targets.token, peer.url, paths)
            bearer = {"Authorization": f"Bearer {targets.token}"}
            probes: list[tuple[str, str, str, dict[str, str]]] = [
                ("hello world (sowctl's floor)", server.url, "/hello", {})
            ]
            for page in pages:
                path = f"/api/sow/{SOW}/items?page={page}&limit={LIMIT}"
                probes.append((f"sowctl page {page}", server.url, path, bearer))
                probes.append((f"datasette page {page}", peer.url, paths[page], {}))
            rows = {label: Row(label, [], [], [], []) for label, *_ in probes}
            meters = {server.url: server.meter, peer.url: peer.meter}
            for label, base, path, headers in probes:  # warm-up: connections, caches, imports
                bench.wrk(base, bench.Probe(label, path, headers), 1)
            for _ in range(args.rounds):
                for label, base, path, headers in probes:
                    before = meters[base].snapshot()
                    rps, p50, _p99, errors, count = bench.wrk(
                        base, bench.Probe(label, path, headers), args.duration
                    )
                    spent = meters[base].cost(before, meters[base].snapshot(), count)
                    if errors != "0":
                        raise SystemExit(f"{label}: wrk errors {errors}")
                    rows[label].rps.append(rps)
                    rows[label].p50.append(p50)
                    rows[label].cpu_ms.append(spent.server_us / 1000)
                    rows[label].statements.append(spent.sqlite_statements or 0.0)
                    print(
                        f"# {label:32} {rps:8.0f} req/s  p50 {p50:7.2f} ms  server CPU "
                        f"{rows[label].cpu_ms[-1]:.2f} ms/request, {spent.sqlite_statements:.2f} statements",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            server.stop()
            if peer is not None:
                peer.stop()

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    hello = mean(rows[probes[0][0]].rps)
    lines = [
        "| request | req/s | p50 ms | server CPU ms per request | req/s vs datasette, same page "
        "| CPU per request, datasette / sowctl | req/s vs sowctl page 1 | vs hello world "
        "| SQLite statements per request |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    first_ours = mean(rows[f"sowctl page {pages[0]}"].rps)
    for label, row in rows.items():
        rps, cpu = mean(row.rps), mean(row.cpu_ms)
        versus_peer = cpu_versus_peer = versus_first = ""
        if label.startswith("sowctl page"):
            theirs = rows["datasette page " + label.rsplit(" ", 1)[1]]
            versus_peer = f"**{rps / mean(theirs.rps):.2f}x**"
            cpu_versus_peer = f"{mean(theirs.cpu_ms) / cpu:.2f}x"
            versus_first = f"{rps / first_ours:.2f}"
        cells = [
            label,
            f"{rps:,.0f}",
            f"{mean(row.p50):.2f}",
            f"{cpu:.2f}",
            versus_peer,
            cpu_versus_peer,
            versus_first,
            f"{rps / hello:.1%}",
            f"{mean(row.statements):.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    command = "python bench/bench_list_pages.py " + shlex.join(sys.argv[1:])
    header = (
        f"`{command.strip()}` ({date.today().isoformat()}; {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; wrk {' '.join(bench.WRK_ARGS)} "
        f"-d{args.duration:g}s, {args.rounds} interleaved rounds averaged; sowctl with {args.workers} "
        f"workers of {bench.THREADS} threads, datasette one process; 1-minute load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after)."
    )
    text = "\n".join(lines)
    print(header + "\n\n" + text)
    if args.write:
        bench.write_section(args.write, f"{SECTION}\n\n{header}\n\n{text}\n")


if __name__ == "__main__":
    main()
