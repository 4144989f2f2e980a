#!/usr/bin/env python
"""Benchmark candidate WSGI servers for `sowctl serve` with wrk on loopback.

Usage (needs `wrk` on PATH; `apt-get install -y wrk`):

    python bench/wsgi_servers.py                 # full matrix, markdown table on stdout
    python bench/wsgi_servers.py --only "waitress|gthread"  # variants matching a regex
    python bench/wsgi_servers.py --rounds 1      # quicker, noisier

Loopback numbers on a small VM are noisy (wrk shares the CPUs with the
server, and so does anything else running), so the matrix is repeated
--rounds times, interleaved, and the table reports medians plus the req/s
range.  "server CPU µs/req" (user+system time of the server's process group
during the wrk run, over the requests served) is the steadier figure.

Also reported per variant: the listen backlog as the kernel sees it (`ss`),
and how requests spread over processes (X-Pid header counted by a wrk Lua
script during a separate 2 s run, so the main run is not slowed by Lua).

Every server runs in its own process group and is killed (SIGTERM, then
SIGKILL) after its run, also when this script is interrupted.  Each variant
takes ~9 s: start-up (bounded to 5 s), a 2 s pid-spread run, the 5 s wrk run;
every wrk call has a hard timeout.

The script re-invokes itself with `--serve ...` to host a server, so the
benchmark is a single self-contained file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field

HOST = "127.0.0.1"
WRK_ARGS = ["-t2", "-c32", "-d5s", "--latency"]
DB_ROWS = 1000


# --------------------------------------------------------------------------- apps


def make_app(kind: str, db_path: str | None):
    import bottle

    app = bottle.Bottle()
    pid = str(os.getpid())

    @app.hook("after_request")
    def _pid_header() -> None:
        # Lets the harness see which worker process answered.
        bottle.response.set_header("X-Pid", pid)

    if kind == "hello":

        @app.get("/")
        def hello():
            bottle.response.content_type = "application/json"
            return '{"status":"ok"}'

        return app

    import peewee

    # Built per worker process (after fork).  Like sowctl's app: peewee keeps
    # one connection per thread, opened on first use and kept (opening a
    # SQLite connection per request costs ~0.5 ms CPU, more than the query).
    db = peewee.SqliteDatabase(db_path, pragmas={"journal_mode": "wal"})

    class Item(peewee.Model):
        name = peewee.CharField()
        qty = peewee.IntegerField()

        class Meta:
            database = db

    @app.get("/")
    def item():
        db.connect(reuse_if_open=True)
        row = Item.get_by_id(random.randint(1, DB_ROWS))
        bottle.response.content_type = "application/json"
        return json.dumps({"status": "ok", "id": row.id, "name": row.name, "qty": row.qty})

    return app


def create_db(path: str) -> None:
    import peewee

    db = peewee.SqliteDatabase(path, pragmas={"journal_mode": "wal"})

    class Item(peewee.Model):
        name = peewee.CharField()
        qty = peewee.IntegerField()

        class Meta:
            database = db

    with db:
        db.create_tables([Item])
        with db.atomic():
            Item.insert_many(
                [(f"item-{i}", i) for i in range(1, DB_ROWS + 1)], fields=[Item.name, Item.qty]
            ).execute()


# ----------------------------------------------------------------- server side


def run_server(ns: argparse.Namespace) -> None:
    def factory():
        return make_app(ns.app, ns.db)

    if ns.serve == "waitress":
        import waitress

        waitress.serve(factory(), host=HOST, port=ns.port, threads=ns.threads, _quiet=True)
    elif ns.serve == "cheroot":
        from cheroot import wsgi

        server = wsgi.Server((HOST, ns.port), factory(), numthreads=ns.threads, request_queue_size=ns.backlog)
        server.start()
    elif ns.serve.startswith("sowctl-runner"):
        # The production runner itself (sowctl/server/runner.py).
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from sowctl.server.runner import serve

        serve(
            factory,
            host=HOST,
            port=ns.port,
            workers=ns.workers,
            threads=ns.threads,
            access_log=ns.serve.endswith("-log"),
        )
    elif ns.serve.startswith("gunicorn"):
        from gunicorn.app.base import BaseApplication

        options = {
            "bind": f"{HOST}:{ns.port}",
            "workers": ns.workers,
            "worker_class": ns.serve.split("-", 1)[1],
            "threads": ns.threads,
            "reuse_port": ns.reuse_port,
            "backlog": ns.backlog,
            "keepalive": 5,
            "graceful_timeout": 3,
            "loglevel": "warning",
            "control_socket_disable": True,
        }

        class App(BaseApplication):
            def load_config(self) -> None:
                for key, value in options.items():
                    self.cfg.set(key, value)

            def load(self):
                return factory()

        App().run()
    else:
        raise SystemExit(f"unknown server {ns.serve}")


# ---------------------------------------------------------------- client side


@dataclass
class Variant:
    name: str
    server: str
    workers: int = 1
    threads: int = 4
    reuse_port: bool = False
    backlog: int = 2048


@dataclass
class Result:
    variant: str
    app: str
    rps: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    errors: str = ""
    backlog: str = "?"
    pid_spread: dict[str, int] = field(default_factory=dict)
    cpu_us_per_req: float = float("nan")
    note: str = ""


VARIANTS = [
    Variant("waitress threads=4", "waitress", threads=4),
    Variant("waitress threads=8", "waitress", threads=8),
    Variant("cheroot numthreads=8 (default queue 5)", "cheroot", threads=8, backlog=5),
    Variant("cheroot numthreads=8 queue=2048", "cheroot", threads=8, backlog=2048),
    Variant("gunicorn sync w=2", "gunicorn-sync", workers=2, reuse_port=True),
    Variant("gunicorn sync w=4", "gunicorn-sync", workers=4, reuse_port=True),
    Variant("gunicorn gthread w=2 t=4 reuse_port", "gunicorn-gthread", workers=2, threads=4, reuse_port=True),
    Variant(
        "gunicorn gthread w=2 t=4 shared socket", "gunicorn-gthread", workers=2, threads=4, reuse_port=False
    ),
    Variant("sowctl runner w=2 t=4 (no access log)", "sowctl-runner", workers=2, threads=4),
    Variant("sowctl runner w=2 t=4 + access log", "sowctl-runner-log", workers=2, threads=4),
]

# Counts responses per X-Pid across wrk threads (each has its own Lua state).
PID_LUA = r"""
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) pids = {} end
function response(status, headers, body)
  local p = headers["X-Pid"] or headers["x-pid"] or "?"
  pids[p] = (pids[p] or 0) + 1
end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for p, n in pairs(t:get("pids")) do total[p] = (total[p] or 0) + n end
  end
  for p, n in pairs(total) do io.write("PID ", p, " ", n, "\n") end
end
"""

_children: list[subprocess.Popen] = []


def kill_group(proc: subprocess.Popen, grace: float = 4.0) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    try:
        # Also catches gunicorn workers that outlived a dead master.
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server not ready in time")


def listen_backlog(port: int) -> str:
    # For a LISTEN socket `ss` shows the configured backlog as Send-Q;
    # with SO_REUSEPORT there is one socket per worker.
    out = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=5
    ).stdout
    values = sorted({line.split()[2] for line in out.splitlines() if line.strip()})
    sockets = len([line for line in out.splitlines() if line.strip()])
    return f"{'/'.join(values)} x{sockets}" if values else "?"


def group_cpu_seconds(pgid: int) -> float:
    """user+system CPU time of the live processes in a process group (server master + workers)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After "(comm)": state ppid pgrp ... utime(12th) stime(13th).
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def parse_ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not m:
        return float("nan")
    return float(m[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m[2]]


def run_wrk(port: int, extra: list[str], timeout: float = 10.0) -> str:
    cmd = ["wrk", *extra, f"http://{HOST}:{port}/"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout


def bench_variant(v: Variant, app: str, db_path: str, lua_path: str, raw_dir: str | None) -> Result:
    res = Result(v.name, app)
    port = free_port()
    cmd = [sys.executable, __file__, "--serve", v.server, "--app", app, "--db", db_path]
    cmd += ["--port", str(port), "--workers", str(v.workers), "--threads", str(v.threads)]
    cmd += ["--backlog", str(v.backlog)] + (["--reuse-port"] if v.reuse_port else [])
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        _children.append(proc)
        try:
            wait_ready(port, proc)
            measure(port, proc.pid, v, res, lua_path, raw_dir)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            res.note = str(exc)
        finally:
            kill_group(proc)
            _children.remove(proc)
        log.seek(0)
        tail = log.read().decode(errors="replace").strip().splitlines()
        if res.note and tail:
            res.note += " | " + tail[-1]
    return res


def measure(port: int, pgid: int, v: Variant, res: Result, lua_path: str, raw_dir: str | None) -> None:
    if v.workers > 1:
        # Give the last worker time to bind before judging the spread.
        time.sleep(0.5)
    res.backlog = listen_backlog(port)
    spread = run_wrk(port, ["-t2", "-c32", "-d2s", "-s", lua_path], timeout=6)
    res.pid_spread = {m[1]: int(m[2]) for m in re.finditer(r"^PID (\S+) (\d+)$", spread, re.M)}
    cpu_before = group_cpu_seconds(pgid)
    out = run_wrk(port, WRK_ARGS)
    cpu = group_cpu_seconds(pgid) - cpu_before
    if m := re.search(r"(\d+) requests in", out):
        res.cpu_us_per_req = cpu / max(int(m[1]), 1) * 1e6
    if raw_dir:
        name = re.sub(r"\W+", "_", f"{res.app}_{v.name}")
        with open(os.path.join(raw_dir, f"{name}_{time.time_ns()}.txt"), "w") as fh:
            fh.write(spread + "\n" + out)
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    res.rps = float(m[1]) if m else 0.0
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.M))
    res.p50_ms, res.p99_ms = parse_ms(lat.get("50", "")), parse_ms(lat.get("99", ""))
    errs = []
    if m := re.search(r"Socket errors: (.*)", out):
        errs.append(m[1])
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        errs.append(f"non-2xx {m[1]}")
    res.errors = "; ".join(errs) or "0"


def fmt_spread(spread: dict[str, int]) -> str:
    total = sum(spread.values())
    if not total:
        return "?"
    shares = sorted((100 * n / total for n in spread.values()), reverse=True)
    return f"{len(spread)}: " + "/".join(f"{s:.0f}" for s in shares) + "%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve")
    parser.add_argument("--app", default="hello", choices=["hello", "db"])
    parser.add_argument("--db")
    parser.add_argument("--port", type=int)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--backlog", type=int, default=2048)
    parser.add_argument("--reuse-port", action="store_true")
    parser.add_argument("--only", default="", help="regex filter on variant names")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--raw-dir", help="keep raw wrk output here")
    ns = parser.parse_args()

    if ns.serve:
        run_server(ns)
        return

    def on_signal(signum, _frame):
        for proc in list(_children):
            kill_group(proc, grace=1.0)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    load_before = os.getloadavg()[0]  # others' activity skews loopback numbers

    with tempfile.TemporaryDirectory() as tmp:
        db_path = os.path.join(tmp, "bench.sqlite")
        create_db(db_path)
        lua_path = os.path.join(tmp, "pids.lua")
        with open(lua_path, "w") as fh:
            fh.write(PID_LUA)

        runs: dict[tuple[str, str], list[Result]] = {}
        for rnd in range(ns.rounds):
            for app in ("hello", "db"):
                for v in VARIANTS:
                    if not re.search(ns.only, v.name):
                        continue
                    r = bench_variant(v, app, db_path, lua_path, ns.raw_dir)
                    print(
                        f"# round {rnd + 1} {app:5} {v.name:40} {r.rps:7.0f} req/s  "
                        f"p50 {r.p50_ms:.2f}ms p99 {r.p99_ms:.2f}ms "
                        f"cpu {r.cpu_us_per_req:.0f}us/req  {r.note}",
                        file=sys.stderr,
                        flush=True,
                    )
                    runs.setdefault((app, v.name), []).append(r)

    print(
        f"wrk {' '.join(WRK_ARGS)}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs; "
        f"median of {ns.rounds} interleaved rounds; 1-min load average before/after the run "
        f"{load_before:.1f}/{os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| app | server | req/s (median) | req/s range | server CPU µs/req | p50 ms | p99 ms | wrk errors "
        "| listen backlog x sockets | pids: share of requests |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|---|---|")
    for (app, name), rs in runs.items():
        ok = [r for r in rs if not r.note] or rs
        rps = sorted(r.rps for r in ok)
        errors = ", ".join(sorted({r.errors or r.note for r in rs} - {"0"})) or "0"
        print(
            f"| {app} | {name} | {statistics.median(rps):.0f} | {rps[0]:.0f}..{rps[-1]:.0f} | "
            f"{statistics.median(r.cpu_us_per_req for r in ok):.0f} | "
            f"{statistics.median(r.p50_ms for r in ok):.2f} | "
            f"{statistics.median(r.p99_ms for r in ok):.2f} | {errors} | {ok[-1].backlog} | "
            f"{fmt_spread(ok[-1].pid_spread)} |"
        )


if __name__ == "__main__":
    main()
