#!/usr/bin/env python3
"""Create item and create dependency: ``sowctl serve`` against a plain CRUD peer, one run.

    pip install -e '.[bench]'                           # the peer's FastAPI, SQLModel, uvicorn
    python bench/bench_write_peer.py                     # SQLite and PostgreSQL
    python bench/bench_write_peer.py --backends sqlite --rounds 2 --duration 4
    python bench/bench_write_peer.py --profile 6         # also where each side's time goes (py-spy)
    python bench/bench_write_peer.py --write BENCHMARKS.md

The peer is ``bench/peer_crud.py``: FastAPI + SQLModel under uvicorn, what a team might write
for the same two writes on the same tables with none of sowctl's rules (its docstring lists what
it does per request: the token looked up, the SOW or the two items read within the caller's
organization, one INSERT, COMMIT). sowctl is ``sowctl --db DB serve --quiet --port 0
--workers W --threads T`` as a user starts it (Group A writes are not rate limited, so no
setting is changed); the peer runs ``--workers W`` uvicorn processes. A third server,
"sowctl, no events", is the same with ``--event-retention 0``: the changes feed's outbox off,
every other rule on, so the difference is what the outbox costs. Each server serves its
own copy of the throughput benchmark's dataset (``bench/bench_throughput.py``: 20 SOWs of
5,000 items and 5,000 dependencies; on PostgreSQL a database made from its template and
``VACUUM ANALYZE``d), with a bearer token of its own (``bench_throughput.prepare_run``).

Requests, with ``wrk -t2 -c32 --latency`` on loopback, sharing the two CPUs with both servers:

* create item: ``POST /api/sow/sow-bench-002/items`` with a new task item
  (``bench/post_items.lua``): sowctl finds the next sibling order, writes the item, its event;
* create dependency: ``POST /api/dependencies`` (``bench/post_dependencies.lua``), depends_on
  pairs of ``sow-bench-002`` that never close a cycle: sowctl takes the organization's write
  lock, checks for a cycle and updates the maintained order (ranks), writes the row, its event.

The servers run at once; every request runs on each in turn, the order reversed each round,
``--rounds`` times, and the figures are means. Costs per request are read around each wrk run
by ``bench/cost.py``: user+system CPU of each server's process tree, on PostgreSQL the CPU of
the backends serving its database, and the statements each side sent (Peewee's for sowctl,
SQLAlchemy's for the peer, each BEGIN/COMMIT included; on SQLite also every statement SQLite
ran; on PostgreSQL also the WAL records and WAL flushes per request, from ``pg_stat_wal``: the
whole server's, other sessions' writes included). ``--profile S`` then samples each side's
processes with py-spy for S seconds under each request and sorts the samples into what sowctl's
rules and layers cost (py-spy, in the bench extra, must be allowed to ptrace the servers: root,
or ``kernel.yama.ptrace_scope`` 0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import urlsplit

import bench_throughput as bt
import cost
import peer_crud

BENCH = Path(__file__).resolve().parent
SECTION = "## Writes against a plain CRUD peer"
WAITING = "waiting or native"  # left out of the shares
NO_EVENTS = "sowctl, no events"  # serve --event-retention 0: the outbox off, every other rule on
NAMES = {
    "sowctl": "sowctl_bench_peer_ours",
    NO_EVENTS: "sowctl_bench_peer_noev",
    "peer": "sowctl_bench_peer_crud",
}
SIDES = ("sowctl", NO_EVENTS, "peer")


# --- the two servers --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Side:
    """One server in a process group of its own, counting its statements, on ``db``."""

    def __init__(self, name: str, db: str, workers: int, threads: int, pg_url: str) -> None:
        self.name = name
        self.counts = tempfile.TemporaryDirectory()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_") and k != "PYTHONPATH"}
        env = cost.environment(Path(self.counts.name), env)
        if name.startswith("sowctl"):
            command = [sys.executable, "-m", "sowctl", "--db", db, "serve", "--port", "0", "--quiet"]
            command += ["--workers", str(workers), "--threads", str(threads)]
            command += ["--event-retention", "0"] * (name == NO_EVENTS)
        else:
            port = free_port()
            env[peer_crud.DB_ENV] = db
            command = peer_crud.uvicorn_command("127.0.0.1", port, workers)
            self.url = f"http://127.0.0.1:{port}"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env, start_new_session=True
        )
        if name.startswith("sowctl"):
            assert self.process.stdout is not None
            for line in self.process.stdout:
                if line.startswith("Listening on "):
                    self.url = line.split()[-1].rstrip("/")
                    break
            else:
                self.stop()
                raise RuntimeError(f"sowctl serve did not start: {self.output()[-2000:]}")
        on_pg = "://" in db
        self.wal = None
        if on_pg:
            import psycopg2

            self.wal = psycopg2.connect(pg_url)
            self.wal.autocommit = True
        self.meter = cost.Meter(
            self.process.pid,
            Path(self.counts.name),
            pg_url if on_pg else None,
            urlsplit(db).path.lstrip("/") if on_pg else "",
        )

    def wal_written(self) -> tuple[int, int]:
        """The PostgreSQL server's WAL records and WAL flushes so far (all its databases: other
        sessions' writes count too); (0, 0) on SQLite."""
        if self.wal is None:
            return 0, 0
        with self.wal.cursor() as cursor:
            cursor.execute("SELECT wal_records, wal_sync FROM pg_stat_wal")
            records, flushes = cursor.fetchone()
        return int(records), int(flushes)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.meter.close()
        if self.wal is not None:
            self.wal.close()
        self.counts.cleanup()


# --- the requests -----------------------------------------------------------------------------


@dataclass
class Write:
    name: str
    path: str
    script: list[str]  # wrk -s SCRIPT URL -- ARGS

    def probe(self) -> bt.Probe:
        return bt.Probe(self.name, self.path, script=self.script)


def writes(targets: bt.Targets) -> list[Write]:
    return [
        Write(
            "create item",
            "",
            [str(BENCH / "post_items.lua"), bt.POST_SOW, targets.token],
        ),
        Write(
            "create dependency",
            "/api/dependencies",
            [str(BENCH / "post_dependencies.lua"), str(targets.pairs_file), targets.token, "2"],
        ),
    ]


def post(url: str, token: str, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def first_answers(side: Side, targets: bt.Targets, deadline: float = 120.0) -> None:
    """Each write answers 201 once before anything is timed (waiting for the server to listen:
    uvicorn says nothing when it does; a refusal would be fast and wrong)."""
    pair = targets.pairs_file.read_text().split("\n", 1)[0].split()
    calls = [
        (f"{side.url}/api/sow/{bt.POST_SOW}/items", {"title": "first", "type": "task_item"}),
        (
            f"{side.url}/api/dependencies",
            {
                "sourceItemId": pair[0],
                "targetItemId": pair[1],
                "dependencyType": "depends_on",
                "riskLevel": "low",
            },
        ),
    ]
    give_up = time.monotonic() + deadline
    for url, body in calls:
        while True:
            try:
                status, text = post(url, targets.token, body)
                break
            except OSError:
                if side.process.poll() is not None or time.monotonic() > give_up:
                    raise RuntimeError(f"{side.name} did not answer: {side.output()[-2000:]}") from None
                time.sleep(0.2)
        if status != 201:
            raise RuntimeError(f"{side.name} {url}: {status} {text[:300]}")


# --- measuring --------------------------------------------------------------------------------


@dataclass
class Figures:
    rps: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    costs: list[cost.Cost] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wal_records: list[float] = field(default_factory=list)  # per request, PostgreSQL only
    wal_flushes: list[float] = field(default_factory=list)


def measure(side: Side, write: Write, duration: float, figures: Figures) -> None:
    before, wal_before = side.meter.snapshot(), side.wal_written()
    rps, p50, _p99, errors, count = bt.wrk(side.url, write.probe(), duration)
    spent = side.meter.cost(before, side.meter.snapshot(), count)
    if side.wal is not None:
        wal = [
            (after - first) / max(count, 1)
            for first, after in zip(wal_before, side.wal_written(), strict=True)
        ]
        figures.wal_records.append(wal[0])
        figures.wal_flushes.append(wal[1])
    figures.rps.append(rps)
    figures.p50.append(p50)
    figures.costs.append(spent)
    if errors != "0":
        figures.errors.append(errors)
    db = "" if spent.db_us is None else f" + db {spent.db_us:5.0f}"
    print(
        f"# {side.name:17} {write.name:18} {rps:7.0f} req/s  p50 {p50:7.2f} ms  "
        f"cpu {spent.server_us:5.0f}{db} us/req  {spent.statements:.2f} stmts/req  errors {errors}",
        file=sys.stderr,
        flush=True,
    )


def run_backend(backend: str, template: str, ns: argparse.Namespace, workdir: Path) -> list[dict]:
    """Both sides on copies of ``template``; every write measured in interleaved rounds."""
    sides: dict[str, Side] = {}
    targets: dict[str, bt.Targets] = {}
    try:
        for name in SIDES:
            db = bt.fresh_copy(backend, template, ns.pg_url, workdir, NAMES[name])
            (workdir / name).mkdir(exist_ok=True)
            targets[name] = bt.prepare_run(db, workdir / name)
            if backend != "sqlite":
                bt.vacuum(db)
            sides[name] = Side(name, db, ns.workers, ns.threads, ns.pg_url)
        for name in SIDES:
            first_answers(sides[name], targets[name])
            for write in writes(targets[name]):  # warm-up: connections, caches, lazy imports
                bt.wrk(sides[name].url, write.probe(), 1)
        figures = {(name, w.name): Figures() for name in SIDES for w in writes(targets[name])}
        for round_ in range(ns.rounds):
            order = SIDES if round_ % 2 == 0 else SIDES[::-1]
            for k in range(len(writes(targets["sowctl"]))):
                for name in order:
                    write = writes(targets[name])[k]
                    measure(sides[name], write, ns.duration, figures[name, write.name])
        profiles = {}
        if ns.profile:
            for name in ("sowctl", "peer"):
                for write in writes(targets[name]):
                    profiles[name, write.name] = profile(sides[name], write, ns.profile, ns.profile_dir)
    finally:
        for side in sides.values():
            side.stop()
            log = side.output()
            side.log.close()
            if "Traceback" in log:
                print(log[-3000:], file=sys.stderr)
        if backend != "sqlite":
            for name in SIDES:
                bt.drop_run_database(ns.pg_url, NAMES[name])
    return [
        {
            "backend": backend,
            "side": name,
            "write": write,
            "figures": found,
            "profile": profiles.get((name, write)),
        }
        for (name, write), found in figures.items()
    ]


# --- where the time goes: py-spy --------------------------------------------------------------

# A sample counts for the first of these parts found from the root of its stack down (a
# rule's own statements count for the rule), "function (file:line)" containing the marker.
SOWCTL_PARTS = [
    ("events outbox", "sowctl/services/events.py"),
    ("cycle check and ranks", "sowctl/services/graph"),
    ("tallies of the ancestors", "sowctl/storage/tallies.py"),
    ("write transaction (turns, BEGIN, COMMIT)", "write_transaction ("),
    ("authentication", "sowctl/services/credentials.py"),
    ("authentication", "sowctl/server/auth.py"),
    ("rate limit", "sowctl/services/ratelimit.py"),
    ("body validation (Pydantic)", "build_request ("),
    ("answer (to_out, JSON)", "to_out ("),
    ("answer (to_out, JSON)", "json_bytes ("),
]
PEER_PARTS = [
    ("authentication", ".caller ("),
    ("body validation (Pydantic)", "request_body_to_args ("),
    ("answer (to_out, JSON)", "serialize_response ("),
]
# Otherwise: a statement if one runs anywhere on the stack, else the innermost of the others.
STATEMENT_MARKERS = ("execute_sql (", "do_execute (", "do_commit (", "do_rollback (")
COMMON_PARTS = [
    ("handlers' own Python (services, operations)", "sowctl/services/"),
    ("handlers' own Python (services, operations)", "sowctl/operations/"),
    ("handlers' own Python (services, operations)", "sowctl/storage/"),
    ("handlers' own Python (services, operations)", "peer_crud.py"),
    ("ORM (Peewee / SQLAlchemy)", "peewee.py"),
    ("ORM (Peewee / SQLAlchemy)", "sqlalchemy/"),
    ("ORM (Peewee / SQLAlchemy)", "sqlmodel/"),
    ("HTTP server and framework", "sowctl/engine/"),
    ("HTTP server and framework", "bottle.py"),
    ("HTTP server and framework", "sowctl/server/"),
    ("HTTP server and framework", "uvicorn/"),
    ("HTTP server and framework", "starlette/"),
    ("HTTP server and framework", "fastapi/"),
    ("HTTP server and framework", "anyio/"),
    ("HTTP server and framework", "asyncio/"),
    ("HTTP server and framework", "concurrent/futures/"),
]
# A leaf frame that waits (for work, a socket, a turn to write: sowctl's turns between
# processes poll a file lock and sleep) is no work: its sample is left out, as are stacks
# without a Python frame (granian's threads, native code). What py-spy cannot tell apart: a
# statement waiting in SQLite's busy handler (the peer's writers queue there) counts as one.
WAITS = (
    "Condition.wait (",
    "Event.wait (",
    "Queue.get (",
    ".select (",
    "_worker (concurrent",
    "Turns.hold (",
)


def classify(stack: list[str], parts: list[tuple[str, str]]) -> str | None:
    frames = [f for f in stack if not f.startswith(("process ", "thread "))]
    if not frames or any(wait in frames[-1] for wait in WAITS):
        return None
    for frame in frames:
        for part, marker in parts:
            if marker in frame:
                return part
    if any(marker in frame for frame in frames for marker in STATEMENT_MARKERS):
        return "statements (driver and SQLite)"
    for frame in reversed(frames):
        for part, marker in COMMON_PARTS:
            if marker in frame:
                return part
    return "the rest"


def profile(side: Side, write: Write, seconds: float, keep: Path | None = None) -> Counter[str] | None:
    """Samples of ``side``'s processes (py-spy, running threads only) under ``write``'s load."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("# py-spy not found: no profile", file=sys.stderr)
        return None
    out = Path(side.counts.name).parent / f"spy-{side.name}-{write.name.replace(' ', '-')}.txt"
    recording = subprocess.Popen(
        [
            *(spy, "record", "--pid", str(side.process.pid), "--subprocesses", "--nonblocking"),
            *("--format", "raw", "--rate", "250", "--duration", str(round(seconds)), "--output", str(out)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1)  # py-spy attaches to every process first
    bt.wrk(side.url, write.probe(), seconds)
    recording.wait(seconds + 60)
    if not out.exists():
        print(f"# py-spy recorded nothing for {side.name} {write.name}", file=sys.stderr)
        return None
    parts = SOWCTL_PARTS if side.name == "sowctl" else PEER_PARTS
    shares: Counter[str] = Counter()
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            shares[classify(stack.split(";"), parts) or WAITING] += int(count)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.move(out, keep / out.name)
    else:
        out.unlink()
    return shares


# --- the report -------------------------------------------------------------------------------


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def mean_of(costs: list[cost.Cost], name: str) -> float | None:
    values = [getattr(c, name) for c in costs]
    return None if not values or any(v is None for v in values) else mean(values)


def figure(value: float | None, digits: int = 0) -> str:
    return "-" if value is None or value != value else f"{value:,.{digits}f}"


def ratio(ours: float | None, theirs: float | None) -> str:
    return "-" if not ours or not theirs else f"{ours / theirs:.2f}"


def tables(results: list[dict]) -> str:
    lines = [
        "| backend | request | server | req/s | p50 ms | server CPU µs/req | database CPU µs/req "
        "| statements/req | round trips/req | SQLite statements/req | WAL records/req | WAL flushes/req "
        "| wrk errors |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        f = r["figures"]
        lines.append(
            f"| {r['backend']} | {r['write']} | {r['side']} | {figure(mean(f.rps))} | {mean(f.p50):.2f} | "
            f"{figure(mean_of(f.costs, 'server_us'))} | {figure(mean_of(f.costs, 'db_us'))} | "
            f"{figure(mean_of(f.costs, 'statements'), 2)} | {figure(mean_of(f.costs, 'round_trips'), 2)} | "
            f"{figure(mean_of(f.costs, 'sqlite_statements') or None, 2)} | "
            f"{figure(mean(f.wal_records) if f.wal_records else None, 1)} | "
            f"{figure(mean(f.wal_flushes) if f.wal_flushes else None, 2)} | {'; '.join(f.errors) or '0'} |"
        )
    lines += [
        "",
        "Ratios sowctl / peer (req/s above 1: sowctl serves more; costs above 1: sowctl's cost more):",
        "",
        "| backend | request | sowctl | req/s | server CPU | database CPU | server + database CPU "
        "| statements |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    by_key = {(r["backend"], r["write"], r["side"]): r["figures"] for r in results}
    for backend, write in dict.fromkeys((r["backend"], r["write"]) for r in results):
        theirs = by_key[backend, write, "peer"]
        for label in ("sowctl", NO_EVENTS):
            ours = by_key[backend, write, label]

            def both(name: str, ours=ours, theirs=theirs) -> tuple[float | None, float | None]:
                return mean_of(ours.costs, name), mean_of(theirs.costs, name)

            totals = [mean([c.total_us for c in side.costs]) for side in (ours, theirs)]
            lines.append(
                f"| {backend} | {write} | {label} | {ratio(mean(ours.rps), mean(theirs.rps))} | "
                f"{ratio(*both('server_us'))} | {ratio(*both('db_us'))} | {ratio(*totals)} | "
                f"{ratio(*both('statements'))} |"
            )
    profiled = [r for r in results if r["profile"]]
    if profiled:
        lines += [
            "",
            "Where each side's time goes (py-spy samples of threads at work, waits left out; a thread "
            "in a C call that waits, such as a statement waiting for PostgreSQL, counts as at work):",
            "",
        ]
        for r in profiled:
            shares = Counter({k: v for k, v in r["profile"].items() if k != WAITING})
            total = sum(shares.values()) or 1
            cells = ", ".join(f"{part} {n / total:.0%}" for part, n in shares.most_common())
            lines.append(
                f"* {r['backend']}, {r['write']}, {r['side']} ({total:,} samples at work, "
                f"{r['profile'][WAITING]:,} waiting or native left out): {cells}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--workers", type=int, default=2, help="sowctl workers and uvicorn processes")
    parser.add_argument("--threads", type=int, default=bt.THREADS, help="sowctl serve --threads")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds, averaged")
    parser.add_argument("--profile", type=float, default=0, help="py-spy each side for this many seconds")
    parser.add_argument("--profile-dir", type=Path, help="keep py-spy's raw stacks in this directory")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sowctl-bench",
    )
    parser.add_argument("--write", type=Path, help="record the tables in this markdown file (its section)")
    ns = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install -y wrk)")
    load_before = os.getloadavg()[0]
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in [b.strip() for b in ns.backends.split(",") if b.strip()]:
            if backend == "sqlite":
                template = str(bt.sqlite_template(ns.cache_dir))
            else:
                template = bt.pg_template(ns.pg_url)
            results += run_backend(backend, template, ns, Path(tmp))
    command = "python bench/bench_write_peer.py " + shlex.join(sys.argv[1:])
    header = (
        f"`{command.strip()}` ({date.today().isoformat()}; {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; wrk {' '.join(bt.WRK_ARGS)} "
        f"-d{ns.duration:g}s on loopback, {ns.rounds} interleaved round(s) averaged; sowctl serve "
        f"--workers {ns.workers} --threads {ns.threads}, the peer uvicorn --workers {ns.workers}; "
        f"1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)."
    )
    text = tables(results)
    print(header + "\n\n" + text)
    if ns.write:
        bt.SECTION = SECTION
        bt.write_section(ns.write, f"{SECTION}\n\n{header}\n\n{text}\n")


if __name__ == "__main__":
    main()
