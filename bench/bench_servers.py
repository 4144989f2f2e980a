#!/usr/bin/env python3
"""HTTP servers for ``sowctl serve`` side by side: throughput, CPU per request, and attacks.

    python bench/bench_servers.py --old /tmp/old-engine          # everything, ~35 min
    python bench/bench_servers.py --old /tmp/old-engine --parts throughput --rounds 3
    python bench/bench_servers.py --parts attacks,smuggling,emfile,slowreader

Needs ``wrk`` (``apt-get install -y wrk``), and uvicorn, httptools and waitress in this
environment (``pip install -e '.[bench]'``). ``--old DIR`` is a source tree of the engine
before granian (``git worktree add --detach DIR 3b313f7``) with its own virtualenv in
``DIR/.venv`` (``pip install -e DIR``); without it that variant is left out.

Every variant serves the same application on its own copy of one SQLite database: the
API of ``sowctl.server.app.create_app`` with ``serve --quiet`` settings (write and report
slots as ``serve --threads 4`` sets them, rate limits too high to refuse), plus, in the same
processes, a bare Bottle app at ``/hello`` for the server's own overhead. The database is
``bench/bench_throughput.py``'s (20 SOWs of 5,000 items and 5,000 dependencies, built once
and cached). Variants, 4 threads per worker:

* ``old engine``: ``sowctl.server.runner.serve`` of ``--old`` (gunicorn, sowctl's gthread
  worker, its own request framing), run by that tree's interpreter;
* ``granian + bridge``: ``sowctl.server.runner.serve`` of this tree (what ``sowctl serve`` runs);
* ``uvicorn httptools + bridge`` and ``uvicorn h11 + bridge``: uvicorn (default asyncio
  loop) running the very same ``sowctl.engine.bridge.Bridge`` with the same hooks and limits;
* ``waitress``: ``waitress.serve(app, threads=4)``, its defaults otherwise (one process).

Parts (``--parts``): ``throughput`` (wrk -t2 -c32 on hello world, /healthz, get item, a list
page of 100, create dependency; 1 worker for every variant, then 2 workers where a server
has processes; once more with the access log for the old engine and granian; rounds
interleaved, the order of variants rotated each round); ``attacks`` (ordinary requests timed
by wrk -t1 -c4 while 200 slow heads, 8 slow bodies, 1000 idle sockets or a pipelining
client run, attackers reconnecting when the server closes them); ``smuggling`` (malformed
chunked framing with a request glued behind it, counted by the SOWs it created); ``emfile``
(the server under ``ulimit -n 256``, 400 idle sockets); ``slowreader`` (clients that ask for
a large answer and read nothing); ``pipelinehold`` (1,000 connections that pipeline requests
for a cacheable 87 KB answer and read nothing). Markdown on stdout, each part's tables as
soon as they are measured, the run's command and figures last; progress on stderr.

"server CPU µs/req" is the user+system time of the server's process tree, read from /proc
around each wrk run, over the requests answered: on a shared machine it moves far less than
requests per second.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import ModuleType

import cost

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
HOST = "127.0.0.1"
THREADS = 4
WRK_ARGS = ["-t2", "-c32", "--latency", "--timeout", "30s"]
PARTS = ("throughput", "attacks", "smuggling", "emfile", "slowreader", "pipelinehold")


# --- the served application (runs in the server's processes) ---------------------------------------


def bench_settings(access_log: bool):
    """``sowctl serve --threads 4`` settings, with rate limits that never refuse."""
    from sowctl.server.configuration import ServerSettings

    return ServerSettings(
        rate_per_minute=10**9,
        rate_per_day=10**9,
        access_log=access_log,
        write_slots=max(1, THREADS - 1),
        report_slots=max(1, THREADS - 1),
    )


class Dispatch:
    """``/hello`` to a bare Bottle app, anything else to the API; ``app`` is the API, where a
    server looks for its body limit (``SowctlBottle.body_limit``)."""

    def __init__(self, db_url: str, settings) -> None:
        import bottle

        from sowctl.server.app import create_app

        self.app = create_app(db_url, settings)
        self.hello = bottle.Bottle()
        self.hello.get("/hello")(lambda: "Hello, World!")

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/hello":
            return self.hello(environ, start_response)
        return self.app(environ, start_response)


def asgi_app():
    """uvicorn's factory: the Bridge ``sowctl serve`` runs, around the same application."""
    from sowctl.engine import Hooks
    from sowctl.engine.bridge import Bridge
    from sowctl.server import runner
    from sowctl.server.access_log import AccessLog, log_refusal

    _nodelay_on_inherited_sockets()
    access_log = os.environ["SB_ACCESS_LOG"] == "1"
    settings = bench_settings(access_log)
    app = Dispatch(os.environ["SB_DB"], settings)
    hooks = Hooks(
        answer=lambda path, refusal: runner.answer(path, refusal, settings),
        caller=runner._caller,
        body_limit=runner._body_limit_of(app),
        on_refusal=log_refusal if access_log else Hooks.on_refusal,
    )
    limits = runner.engine_limits(settings, THREADS)
    served = AccessLog(app) if access_log else app
    return Bridge(served, hooks, limits, multiprocess=int(os.environ["SB_WORKERS"]) > 1)


def _nodelay_on_inherited_sockets() -> None:
    """uvicorn --workers hands its workers a listening socket whose ``proto`` is 0, and asyncio
    sets TCP_NODELAY only on accepted sockets whose ``proto`` is TCP: every answer, whose head
    and body are two writes, then waited ~40 ms for the client's delayed ACK (620 req/s at any
    load; Kludex/uvicorn#3149, open). Set it by family and type alone, as a fixed uvicorn would."""
    import asyncio.base_events

    def set_nodelay(sock: socket.socket) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    asyncio.base_events._set_nodelay = set_nodelay


def run_server(ns: argparse.Namespace) -> None:
    from functools import partial

    from sowctl.storage.database import open_database

    open_database(ns.db).close()  # migrated before any fork, as `sowctl serve` does
    if ns.serve == "runner":
        from sowctl.server.runner import serve

        settings = bench_settings(ns.access_log)
        serve(
            partial(Dispatch, ns.db, settings),
            host=HOST,
            port=ns.port,
            workers=ns.workers,
            threads=THREADS,
            access_log=ns.access_log,
            settings=settings,
        )
    elif ns.serve == "waitress":
        import waitress

        waitress.serve(Dispatch(ns.db, bench_settings(False)), host=HOST, port=ns.port, threads=THREADS)
    elif ns.serve == "uvicorn":
        import uvicorn

        os.environ.update(SB_DB=ns.db, SB_ACCESS_LOG=str(int(ns.access_log)), SB_WORKERS=str(ns.workers))
        sys.path.insert(0, str(BENCH))  # the workers import the factory by name
        uvicorn.run(
            "bench_servers:asgi_app",
            factory=True,
            host=HOST,
            port=ns.port,
            workers=ns.workers,
            http=ns.http,
            loop="asyncio",
            log_level="warning",
            access_log=False,
        )
    else:
        raise SystemExit(f"unknown server {ns.serve}")


# --- the variants and their processes ---------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # runner, uvicorn, waitress
    python: str
    workers: int = 1
    access_log: bool = False
    http: str = ""

    @property
    def label(self) -> str:
        return self.name + (" + access log" if self.access_log else "")


def variants(old: Path | None, workers: int) -> list[Variant]:
    here = sys.executable
    found = []
    if old is not None:
        found.append(Variant("old engine", "runner", str(old / ".venv" / "bin" / "python"), workers))
    found.append(Variant("granian + bridge", "runner", here, workers))
    found.append(Variant("uvicorn httptools + bridge", "uvicorn", here, workers, http="httptools"))
    if workers == 1:
        found.append(Variant("waitress", "waitress", here))
    found.append(Variant("uvicorn h11 + bridge", "uvicorn", here, workers, http="h11"))
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class Server:
    """One variant serving ``db`` on a port of its own, in a process group of its own."""

    def __init__(self, variant: Variant, db: str, nofile: int | None = None) -> None:
        self.variant = variant
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        command = [variant.python, str(Path(__file__).resolve()), "--serve", variant.kind, "--db", db]
        command += ["--port", str(self.port), "--workers", str(variant.workers)]
        command += ["--access-log"] * variant.access_log + (["--http", variant.http] if variant.http else [])
        if nofile is not None:  # soft and hard limit, as `ulimit -n N` sets them
            command = ["sh", "-c", f'ulimit -n {nofile} && exec "$@"', "sh", *command]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_") and k != "PYTHONPATH"}
        self.counts = tempfile.TemporaryDirectory()  # statements counted by each server process
        env = cost.environment(Path(self.counts.name), env)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            env=env,
            start_new_session=True,
        )
        self._wait_ready()
        self.first_workers = self.workers()
        self.meter = cost.Meter(self.process.pid, Path(self.counts.name))

    def _wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.variant.label} exited: {self.output()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/hello", timeout=2) as answer:
                    if answer.status == 200:
                        time.sleep(1.0 if self.variant.workers > 1 else 0.2)  # the other workers bind
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.variant.label} did not answer in {timeout:g} s")

    def tree(self) -> list[int]:
        return process_tree(self.process.pid)

    def workers(self) -> list[int]:
        """The server's processes besides the one started (gunicorn's, granian's, uvicorn's workers)."""
        return sorted(pid for pid in self.tree() if pid != self.process.pid)

    def cpu_seconds(self) -> float:
        total = 0
        for pid in self.tree():
            with contextlib.suppress(OSError, IndexError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / os.sysconf("SC_CLK_TCK")

    def rss_kib(self) -> int:
        total = 0
        for pid in self.tree():
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        return total

    def alive(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # workers that outlived their parent too
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        self.counts.cleanup()


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


# --- wrk ------------------------------------------------------------------------------------------


@dataclass
class Wrk:
    requests: int = 0
    rps: float = 0.0
    p50: float = float("nan")
    p99: float = float("nan")
    max_ms: float = float("nan")
    errors: str = "0"


def parse_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text or "")
    if not match:
        return float("nan")
    return float(match[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[match[2]]


def wrk(
    url: str,
    args: list[str],
    duration: float,
    headers: dict[str, str] | None = None,
    script_args: tuple[str, ...] | list[str] = (),
) -> Wrk:
    command = ["wrk", *args, f"-d{max(1, round(duration))}s"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    command.append(url)
    if script_args:
        command += ["--", *script_args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60).stdout
    result = Wrk()
    if m := re.search(r"(\d+) requests in", out):
        result.requests = int(m[1])
    if m := re.search(r"Requests/sec:\s+([\d.]+)", out):
        result.rps = float(m[1])
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.M))
    result.p50, result.p99 = parse_ms(latency.get("50", "")), parse_ms(latency.get("99", ""))
    if m := re.search(r"^\s+Latency\s+\S+\s+\S+\s+(\S+)", out, re.M):
        result.max_ms = parse_ms(m[1])
    errors = []
    if m := re.search(r"Socket errors: (.*)", out):
        errors.append(m[1].replace("connect 0, ", "").replace(", ", " "))
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        errors.append(f"non-2xx {m[1]}")
    result.errors = "; ".join(errors) or "0"
    return result


# --- the database and what the requests need --------------------------------------------------------


def load_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@dataclass
class Dataset:
    """A prepared copy of the throughput dataset, copied again for every server."""

    template: Path
    workdir: Path
    targets: object  # bench_throughput.Targets
    copies: int = 0

    def copy(self) -> str:
        self.copies += 1
        target = self.workdir / f"run-{self.copies}.db"
        fresh_file(self.template, target)
        return str(target)


def fresh_file(source: Path, target: Path) -> None:
    """``source`` copied to ``target``, without a WAL left there by an earlier run (SQLite would
    apply it to the copy)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, target)


def prepare(cache_dir: Path, workdir: Path) -> Dataset:
    throughput = load_module("bench_throughput")
    base = throughput.sqlite_template(cache_dir)
    prepared = workdir / "prepared.db"
    fresh_file(base, prepared)
    targets = throughput.prepare_run(str(prepared), workdir)
    throughput._checkpoint(prepared)  # one file, WAL folded in, so a copy is complete
    return Dataset(prepared, workdir, targets)


@dataclass
class Probe:
    name: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    script: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=lambda: list(WRK_ARGS))


def probes(targets) -> list[Probe]:
    bearer = {"Authorization": f"Bearer {targets.token}"}
    lua = str(BENCH / "post_dependencies.lua")
    return [
        Probe("hello world (bare Bottle)", "/hello"),
        Probe("/healthz (one SELECT 1)", "/healthz"),
        Probe("get item", f"/api/items/{targets.item_id}", bearer),
        # One request at a time: what the server costs when it is not busy (no batching of work).
        Probe(
            "get item, one connection (wrk -t1 -c1)",
            f"/api/items/{targets.item_id}",
            bearer,
            args=["-t1", "-c1", "--latency", "--timeout", "30s"],
        ),
        Probe("list items (page of 100)", "/api/sow/sow-bench-001/items?limit=100", bearer),
        Probe(
            "create dependency (POST)",
            "/api/dependencies",
            script=[lua, str(targets.pairs_file), targets.token, "2"],
        ),
    ]


def run_probe(server: Server, probe: Probe, duration: float) -> Wrk:
    if probe.script:
        args = [*probe.args, "-s", probe.script[0]]
        return wrk(server.url + probe.path, args, duration, script_args=probe.script[1:])
    return wrk(server.url + probe.path, probe.args, duration, probe.headers)


# --- throughput ------------------------------------------------------------------------------------


@dataclass
class Measured:
    variant: Variant
    probe: str
    runs: list[Wrk] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    statements: list[float] = field(default_factory=list)  # SQLite's, per request

    def mean(self, attribute: str) -> float:
        values = [getattr(run, attribute) for run in self.runs]
        return statistics.fmean(values) if values else float("nan")

    @property
    def errors(self) -> str:
        return "; ".join(run.errors for run in self.runs if run.errors != "0") or "0"


def check_answers(server: Server, selected: list[Probe], targets) -> None:
    """Every probe answers 2xx once before it is timed (a fast 4xx would be wrong)."""
    import httpx

    with httpx.Client(base_url=server.url, timeout=60) as client:
        for probe in selected:
            if probe.script:
                source, target = Path(probe.script[1]).read_text().split("\n", 1)[0].split()[:2]
                body = {
                    "sourceItemId": source,
                    "targetItemId": target,
                    "dependencyType": "depends_on",
                    "riskLevel": "low",
                }
                answer = client.post(
                    probe.path, json=body, headers={"Authorization": f"Bearer {targets.token}"}
                )
            else:
                answer = client.get(probe.path, headers=probe.headers)
            if answer.status_code >= 300:
                raise RuntimeError(
                    f"{server.variant.label} {probe.name}: {answer.status_code} {answer.text[:200]}"
                )


def throughput(
    dataset: Dataset, group: list[Variant], only: str, rounds: int, duration: float
) -> list[Measured]:
    """Every probe on every variant of ``group``, all serving at once on their own copies,
    interleaved probe by probe, the order of variants rotated each round."""
    selected = [p for p in probes(dataset.targets) if p.path == "/hello" or re.search(only, p.name)]
    results = {(v, p.name): Measured(v, p.name) for v in group for p in selected}
    servers: dict[Variant, Server] = {}
    try:
        for variant in group:
            servers[variant] = Server(variant, dataset.copy())
        for server in servers.values():
            check_answers(server, selected, dataset.targets)
            for probe in selected:
                run_probe(server, probe, 1)  # warm-up: connections, caches, lazy imports
        for round_ in range(rounds):
            shift = round_ % len(group)
            order = group[shift:] + group[:shift]
            for probe in selected:
                for variant in order:
                    server = servers[variant]
                    before = server.meter.snapshot()
                    run = run_probe(server, probe, duration)
                    spent = server.meter.cost(before, server.meter.snapshot(), run.requests)
                    cpu_us = spent.server_us
                    results[(variant, probe.name)].runs.append(run)
                    results[(variant, probe.name)].cpu_us.append(cpu_us)
                    results[(variant, probe.name)].statements.append(spent.sqlite_statements or 0.0)
                    note(
                        f"round {round_ + 1} w={variant.workers} {variant.label:36} {probe.name:26} "
                        f"{run.rps:8.0f} req/s p50 {run.p50:7.2f} p99 {run.p99:8.2f} ms "
                        f"cpu {cpu_us:6.0f} us/req errors {run.errors}"
                    )
    finally:
        for server in servers.values():
            server.stop()
            if "Traceback" in server.output():
                note(f"{server.variant.label}: {server.output()[-1500:]}")
            server.log.close()
    return list(results.values())


def throughput_tables(results: list[Measured]) -> str:
    by_variant: dict[Variant, dict[str, Measured]] = {}
    for measured in results:
        by_variant.setdefault(measured.variant, {})[measured.probe] = measured
    names = list(dict.fromkeys(m.probe for m in results))
    labels = [v.label for v in by_variant]
    pivots = []
    for title, value in (
        ("server CPU µs per request", lambda m: f"{statistics.fmean(m.cpu_us):,.0f}"),
        ("requests per second", lambda m: f"{m.mean('rps'):,.0f}"),
        ("SQLite statements per request", lambda m: f"{statistics.fmean(m.statements):.2f}"),
    ):
        lines = [f"| {title} | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
        for name in names:
            lines.append(f"| {name} | " + " | ".join(value(by_variant[v][name]) for v in by_variant) + " |")
        pivots.append("\n".join(lines))
    full = [
        "| server | workers | request | req/s | p50 ms | p99 ms | vs hello world | vs /healthz "
        "| server CPU µs/req | wrk errors |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for variant, measured in by_variant.items():
        hello = measured[names[0]].mean("rps")
        healthz = next((m.mean("rps") for n, m in measured.items() if n.startswith("/healthz")), float("nan"))
        for name in names:
            m = measured[name]
            rps = m.mean("rps")
            full.append(
                f"| {variant.label} | {variant.workers} | {name} | {rps:,.0f} | {m.mean('p50'):.2f} | "
                f"{m.mean('p99'):.2f} | {rps / hello:.0%} | {rps / healthz:.2f} | "
                f"{statistics.fmean(m.cpu_us):,.0f} | {m.errors} |"
            )
    return "\n\n".join([*pivots, "\n".join(full)])


# --- the run ----------------------------------------------------------------------------------------


def note(text: str) -> None:
    print(f"# {text}", file=sys.stderr, flush=True)


def versions(old: Path | None) -> str:
    from importlib.metadata import version

    names = ["granian", "uvicorn", "httptools", "h11", "waitress", "bottle"]
    found = [f"{name} {version(name)}" for name in names]
    if old is not None:
        python = old / ".venv" / "bin" / "python"
        script = "from importlib.metadata import version as v; print(v('gunicorn'))"
        out = subprocess.run([str(python), "-c", script], capture_output=True, text=True).stdout.strip()
        found.append(f"gunicorn {out} (old engine)")
    wrk_version = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split()
    found.append(f"wrk {wrk_version[1] if len(wrk_version) > 1 else '?'}")
    return ", ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="source tree of the old engine, with DIR/.venv")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--only", default="", help="regex on request names (hello world always runs)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of throughput runs")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per throughput wrk run")
    parser.add_argument(
        "--attack-duration", type=float, default=10.0, help="seconds of ordinary requests per attack"
    )
    parser.add_argument("--workers", default="1,2", help="worker counts for throughput")
    parser.add_argument("--scenarios", default="", help="regex on the attacks' names (attacks part)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sowctl-bench",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # internal: host a server
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--access-log", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--http", default="httptools", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve:
        ns.workers = int(ns.workers)
        run_server(ns)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install -y wrk)")
    old = ns.old.resolve() if ns.old else None
    if old is not None and not (old / ".venv" / "bin" / "python").exists():
        raise SystemExit(f"{old}/.venv/bin/python not found: make it with python3 -m venv and pip install -e")
    parts = [p.strip() for p in ns.parts.split(",") if p.strip()]
    with contextlib.suppress(ValueError, OSError):  # 1000 idle sockets and more need descriptors
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    load_before = os.getloadavg()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        dataset = prepare(ns.cache_dir, Path(tmp))
        probes_module = load_module("server_probes")
        for part in parts:
            try:
                if part == "throughput":
                    for workers in [int(w) for w in ns.workers.split(",")]:
                        tables = throughput_of(dataset, old, workers, ns)
                        plural = "s" if workers > 1 else ""
                        section(f"### Throughput, {workers} worker{plural}\n\n{tables}")
                else:
                    section(probes_module.run_part(part, dataset, variants(old, 1), ns))
            except Exception as exc:  # the other parts still run, and what failed is on record
                section(f"### {part}: failed\n\n`{type(exc).__name__}: {str(exc)[:1000]}`")
    load_after = os.getloadavg()
    command = "python bench/bench_servers.py " + shlex.join(sys.argv[1:])
    print(
        f"`{command.strip()}` ({date.today().isoformat()}; {platform.system()} {platform.release()} "
        f"{platform.machine()}, nproc {os.cpu_count()}, Python {platform.python_version()}; {versions(old)}; "
        f"throughput: wrk {' '.join(WRK_ARGS)} -d{ns.duration:g}s on loopback, {ns.rounds} interleaved "
        f"round(s) averaged, {THREADS} threads per worker; load average "
        f"{' '.join(f'{x:.1f}' for x in load_before)} before, {' '.join(f'{x:.1f}' for x in load_after)} "
        f"after; {time.monotonic() - started:.0f} s in all)."
    )


def throughput_of(dataset: Dataset, old: Path | None, workers: int, ns: argparse.Namespace) -> str:
    group = variants(old, workers)
    if workers == 1:  # and once with the access log, the old engine against the new
        group += [Variant(v.name, v.kind, v.python, 1, True) for v in group if v.kind == "runner"]
    return throughput_tables(throughput(dataset, group, ns.only, ns.rounds, ns.duration))


def section(text: str) -> None:
    """A part's tables, printed as soon as they are measured (the run's line comes last)."""
    print(text + "\n", flush=True)


if __name__ == "__main__":
    main()
