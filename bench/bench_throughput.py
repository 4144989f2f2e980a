#!/usr/bin/env python3
"""HTTP throughput of ``sowctl serve`` on a large dataset, as ratios to hello world.

    python bench/bench_throughput.py                       # SQLite and PostgreSQL, 1 and 2 workers
    python bench/bench_throughput.py --backends sqlite --workers 2 --only "hello|get item"
    python bench/bench_throughput.py --write BENCHMARKS.md # also record the table there
    python bench/bench_throughput.py --backends sqlite --only "get item|readyz" --compare DIR
                                    # also the sowctl of source tree DIR, interleaved

Needs ``wrk`` on PATH (``apt-get install -y wrk``) and, for PostgreSQL, a server at
``--pg-url`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``).

The dataset is ``bench/gen_dataset.big_dataset(20, 100000, 100000)`` (20 SOWs of
5,000 items and 5,000 dependencies each) imported with
``sowctl.services.dataset.import_dataset``, plus a Group B project with a 40-line
budget snapshot. It is built once and cached: a SQLite file in ``--cache-dir``
and a PostgreSQL template database; every server configuration then runs on a
fresh copy (a file copy, ``CREATE DATABASE ... TEMPLATE``), so the POST
benchmark never changes what the next configuration measures.

Each server is the production runner (``sowctl.server.runner.serve``, what ``sowctl
serve`` runs: granian parsing, sowctl's engine running the application in 4 threads per
worker) serving the real application built by ``create_app`` with ``serve --quiet``
settings and rate limits high enough never to refuse, plus, in the same worker processes, a
bare Bottle app answering ``GET /hello``. ``--compare DIR`` serves DIR's ``sowctl`` the same
way, with the interpreter of ``DIR/.venv`` when there is one (an older tree's own
dependencies, such as the gunicorn of the engine before granian), else with this one. Both
servers then run at once, each on its own copy of the database, and every probe runs on one
and then the other, the order reversed each round: measured one server after the other, the
side measured first came out up to 25% dearer (BENCHMARKS.md).
The script re-invokes itself with ``--serve`` for that, so the hello-world baseline runs on
the same server, workers and run as the requests it is compared with; it is measured first
and last, and the ratio uses the mean.
``/readyz`` (one statement: the schema version) is the floor that includes a database
round trip (``/healthz`` was, before it became a liveness check that asks no database).
``--rounds N`` runs every probe N times interleaved and averages, so that
on a shared machine a request and its floor see the same load on average.

Every request is measured with ``wrk -t2 -c32 -d5s --latency`` on loopback after
a 1 s warm-up; POST /api/dependencies uses ``bench/post_dependencies.lua``,
which cycles through precomputed depends_on pairs that can never close a cycle.
wrk shares the two CPUs with the server, as a client on the same machine would.
"server CPU µs/req" is the user+system time of the server's processes during a run over
the requests it served: steadier than requests per second on a shared machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import platform
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit, urlunsplit

import cost

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## HTTP throughput"
DATASET = {"sows": 20, "items": 100_000, "deps": 100_000, "seed": 1, "today": date(2026, 1, 15)}
# Bump when the dataset or the extra records change: caches of another version are rebuilt.
CACHE_VERSION = 1  # the cached dataset; the run's own changes (tokens, organizations) come after
TEMPLATE_DB = f"sowctl_bench_template_v{CACHE_VERSION}"
RUN_DB = "sowctl_bench_run"
WRK_ARGS = ["-t2", "-c32", "--latency", "--timeout", "30s"]
THREADS = 4
ORG, USER = "org-bench", "user-bench"
COMPANY, FIN_PROJECT, SNAPSHOT = "comp-bench", 5001, 61
CHAIN_SOW, LIST_SOW, POST_SOW = "sow-bench-001", "sow-bench-001", "sow-bench-002"
# Moved to organizations of their own for "create dependency across organizations".
ORG_SOWS = tuple(f"sow-bench-{k:03d}" for k in range(11, 19))
PAIRS = 20_000


# --- the dataset, built once ----------------------------------------------------------------------


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gen_dataset", ROOT / "bench" / "gen_dataset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_dataset(url: str) -> None:
    """Import the big dataset and the Group B records into the empty database at ``url``."""
    from sowctl.services.dataset import import_dataset
    from sowctl.storage import models as m
    from sowctl.storage.database import open_database

    started = time.perf_counter()
    data = load_generator().big_dataset(**DATASET)
    database = open_database(url)
    try:
        import_dataset(data)
        moment = datetime(2026, 1, 10, 9, 0, 0)
        with database.atomic():
            m.Company.create(id=COMPANY, organization=ORG, name="Bench Build LLC")
            m.FinancialProject.create(id=FIN_PROJECT, company=COMPANY, name="Bench Tower")
            m.BudgetView.create(
                id=51, financial_project=FIN_PROJECT, name="Forecast", created_at=moment, updated_at=moment
            )
            m.BudgetViewSnapshot.create(
                id=SNAPSHOT,
                budget_view=51,
                financial_project=FIN_PROJECT,
                name="January",
                created_at=moment,
                created_by={"id": 1, "name": "Bench User", "email": "bench@bench.example"},
            )
            for k in range(40):
                m.SnapshotLineItem.create(
                    snapshot=SNAPSHOT,
                    id=k + 1,
                    position=k,
                    code=f"{k:02d}-100",
                    description=f"Cost code {k}",
                    original_budget=f"{1000 + k}.10",
                    current_budget=f"{1100 + k}.20",
                    committed=f"{900 + k}.30",
                    spent=f"{300 + k}.40",
                    projected_total=f"{1150 + k}.55",
                    variance=None if k % 2 else f"-{k}.35",
                )
            m.Meta.insert(key="bench_dataset", value=str(CACHE_VERSION)).execute()
    finally:
        database.close()
    print(f"# dataset built in {time.perf_counter() - started:.0f} s: {describe(url)}", file=sys.stderr)


def describe(url: str) -> str:
    parts = urlsplit(url)
    return url if not parts.password else urlunsplit(parts._replace(netloc=f"***@{parts.hostname}"))


def sqlite_template(cache_dir: Path) -> Path:
    path = cache_dir / f"throughput-v{CACHE_VERSION}.db"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        for leftover in cache_dir.glob(partial.name + "*"):
            leftover.unlink()
        build_dataset(str(partial))
        _checkpoint(partial)
        os.replace(partial, path)
    return path


def _checkpoint(path: Path) -> None:
    """Fold the WAL into the file, so that copying the file alone copies everything."""
    import sqlite3

    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw.execute("PRAGMA journal_mode=DELETE")


def _admin(pg_url: str):
    import psycopg2

    parts = urlsplit(pg_url)
    conn = psycopg2.connect(
        dbname=parts.path.lstrip("/") or "postgres",
        user=parts.username or "postgres",
        password=parts.password,
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
    )
    conn.autocommit = True
    return conn


def _with_db(pg_url: str, name: str) -> str:
    return urlunsplit(urlsplit(pg_url)._replace(path="/" + name))


def pg_template(pg_url: str) -> str:
    conn = _admin(pg_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEMPLATE_DB,))
            if cur.fetchone() is not None:
                return TEMPLATE_DB
            building = TEMPLATE_DB + "_partial"
            cur.execute(f'DROP DATABASE IF EXISTS "{building}"')
            cur.execute(f'CREATE DATABASE "{building}"')
        build_dataset(_with_db(pg_url, building))
        with conn.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{building}" RENAME TO "{TEMPLATE_DB}"')
        return TEMPLATE_DB
    finally:
        conn.close()


def fresh_copy(backend: str, template: str, pg_url: str, workdir: Path, name: str = RUN_DB) -> str:
    if backend == "sqlite":
        target = workdir / f"{name}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)
        shutil.copyfile(template, target)
        return str(target)
    conn = _admin(pg_url)
    try:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cur.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    finally:
        conn.close()
    return _with_db(pg_url, name)


def vacuum(url: str) -> None:
    """VACUUM ANALYZE, as autovacuum would soon after an import: statistics for the planner
    and the visibility map that lets an index-only scan skip the table."""
    conn = _admin(url)
    try:
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
    finally:
        conn.close()


def drop_run_database(pg_url: str, name: str = RUN_DB) -> None:
    conn = _admin(pg_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
    finally:
        conn.close()


# --- what each run requests -------------------------------------------------------------------


@dataclass
class Targets:
    token: str
    key: str
    item_id: str
    pairs_file: Path
    org_pairs_file: Path  # "source target token" across ORG_SOWS' organizations
    items_file: Path  # every item the bearer token may read (the SOWs left in ORG), one id a line


def prepare_run(url: str, workdir: Path) -> Targets:
    """A token and an API key in the run's database, and the ids the requests use."""
    from sowctl.services import credentials
    from sowctl.storage import models as m
    from sowctl.storage.database import open_database

    database = open_database(url)
    try:
        token = credentials.create_token(USER, ORG, "member").secret
        key = credentials.create_key(ORG).secret
        tasks = (
            m.Item.select(m.Item.id)
            .where((m.Item.sow == LIST_SOW) & (m.Item.type == "task_item"))
            .order_by(m.Item.id)
            .tuples()
        )
        task_ids = [item_id for (item_id,) in tasks]
        item_id = task_ids[len(task_ids) // 2]
        # Item ids follow the dataset's creation order, which every ordering edge agrees
        # with: a later item depending on an earlier one never closes a cycle.
        ordered = [
            i for (i,) in m.Item.select(m.Item.id).where(m.Item.sow == POST_SOW).order_by(m.Item.id).tuples()
        ]
        org_tokens, org_items = spread_organizations()
        readable = m.Item.select(m.Item.id).where(m.Item.sow.not_in(ORG_SOWS)).order_by(m.Item.id).tuples()
        items_file = workdir / "items.txt"
        items_file.write_text("".join(f"{item}\n" for (item,) in readable))
    finally:
        database.close()
    rng = random.Random(7)
    pairs_file = workdir / "pairs.txt"
    with pairs_file.open("w") as out:
        for _ in range(PAIRS):
            earlier, later = sorted(rng.sample(range(len(ordered)), 2))
            out.write(f"{ordered[later]} {ordered[earlier]}\n")
    org_pairs_file = workdir / "org-pairs.txt"
    with org_pairs_file.open("w") as out:
        for n in range(PAIRS):
            k = n % len(org_items)
            earlier, later = sorted(rng.sample(range(len(org_items[k])), 2))
            out.write(f"{org_items[k][later]} {org_items[k][earlier]} {org_tokens[k]}\n")
    return Targets(token, key, item_id, pairs_file, org_pairs_file, items_file)


def spread_organizations() -> tuple[list[str], list[list[str]]]:
    """Move each of ORG_SOWS to a project of an organization of its own (its dependencies
    stay inside it), with a token each: writers that no lock makes wait for each other.
    Returns the tokens and each SOW's item ids in creation order."""
    from sowctl.services import credentials, graph
    from sowctl.storage import models as m

    moment = datetime(2026, 1, 10, 9, 0, 0)
    tokens, items = [], []
    with m.database_proxy.atomic():
        for k, sow_id in enumerate(ORG_SOWS):
            org = f"org-bench-w{k}"
            m.Organization.create(id=org, name=org)
            m.Project.create(
                id=f"proj-w{k}", organization=org, name=org, created_at=moment, updated_at=moment
            )
            m.Sow.update(project=f"proj-w{k}").where(m.Sow.id == sow_id).execute()
        graph.mark_ranks_stale(f"org-bench-w{k}" for k in range(len(ORG_SOWS)))
    for k, sow_id in enumerate(ORG_SOWS):
        tokens.append(credentials.create_token(f"user-bench-w{k}", f"org-bench-w{k}", "member").secret)
        rows = m.Item.select(m.Item.id).where(m.Item.sow == sow_id).order_by(m.Item.id).tuples()
        items.append([item_id for (item_id,) in rows])
    return tokens, items


@dataclass
class Probe:
    name: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    script: list[str] = field(default_factory=list)  # wrk -s SCRIPT URL -- ARGS


def probes(t: Targets) -> list[Probe]:
    bearer = {"Authorization": f"Bearer {t.token}"}
    group_b = {"x-api-key": t.key, "x-organization-id": ORG, "x-company-id": COMPANY}
    lua = str(ROOT / "bench" / "post_dependencies.lua")
    return [
        Probe("hello world (bare Bottle)", "/hello"),
        Probe("/readyz (the schema version)", "/readyz"),
        Probe("/healthz (liveness, no database)", "/healthz"),
        Probe("get item", f"/api/items/{t.item_id}", bearer),
        Probe(
            "get item, every readable item in turn",
            "/api/items/",
            script=[str(ROOT / "bench" / "get_items.lua"), str(t.items_file), t.token],
        ),
        Probe("list items (page of 100)", f"/api/sow/{LIST_SOW}/items?limit=100", bearer),
        Probe("create dependency (POST)", "/api/dependencies", script=[lua, str(t.pairs_file), t.token, "2"]),
        Probe(
            f"create dependency across {len(ORG_SOWS)} organizations (POST)",
            "/api/dependencies",
            script=[lua, str(t.org_pairs_file), t.token, "2"],
        ),
        Probe("chain of a 5,000-dependency SOW", f"/api/dependencies/chain?sowId={CHAIN_SOW}", bearer),
        Probe(
            "Group B snapshot (40 lines)",
            f"/api/external/budget-view-snapshot?project_id={FIN_PROJECT}&snapshot_id={SNAPSHOT}",
            group_b,
        ),
        Probe("/projects", "/projects", bearer),
    ]


# --- the server --------------------------------------------------------------------------------


def bench_app(db_url: str, settings):  # runs in every worker, after the fork
    import bottle

    from sowctl.server.app import create_app

    api = create_app(db_url, settings)
    hello = bottle.Bottle()

    @hello.get("/hello")
    def hello_world() -> str:
        return "Hello, World!"

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/hello":
            return hello(environ, start_response)
        return api(environ, start_response)

    app.app = api  # where the server looks for the API's body limit (SowctlBottle.body_limit)
    return app


def run_server(ns: argparse.Namespace) -> None:
    from functools import partial

    from sowctl.server.configuration import ServerSettings
    from sowctl.server.runner import serve
    from sowctl.storage.database import open_database

    open_database(ns.serve).close()  # migrated before the fork, as `sowctl serve` does
    settings = ServerSettings(rate_per_minute=10**9, rate_per_day=10**9, access_log=False)
    # A runner compared with --compare may predate the settings argument.
    extra = {"settings": settings} if "settings" in inspect.signature(serve).parameters else {}
    serve(
        partial(bench_app, ns.serve, settings),
        port=0,
        workers=ns.server_workers,
        threads=ns.server_threads,
        on_ready=lambda url: print(f"Listening on {url}", flush=True),
        access_log=False,
        **extra,
    )


class Server:
    def __init__(self, db_url: str, workers: int, source: Path | None = None, pg_url: str = "") -> None:
        python = sys.executable
        if source is not None and (source / ".venv" / "bin" / "python").exists():
            python = str(source / ".venv" / "bin" / "python")
        command = [python, __file__, "--serve", db_url, "--server-workers", str(workers)]
        command += ["--server-threads", str(THREADS)]
        env = dict(os.environ)
        if source is not None:  # --compare: the sowctl package of another source tree
            env["PYTHONPATH"] = str(source)
        self.counts = tempfile.TemporaryDirectory()
        env = cost.environment(Path(self.counts.name), env)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("Listening on "):
            self.stop()
            raise RuntimeError(f"server did not start: {line!r} {self.stderr()[-2000:]}")
        self.url = line.split()[-1]
        on_pg = db_url.startswith("postgres")
        self.meter = cost.Meter(
            self.process.pid,
            Path(self.counts.name),
            pg_url or db_url if on_pg else None,
            urlsplit(db_url).path.lstrip("/") if on_pg else "",
        )

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process.stdout.close()
        if hasattr(self, "meter"):
            self.meter.close()
        self.counts.cleanup()


# --- measuring ------------------------------------------------------------------------------------


@dataclass
class Measure:
    backend: str
    workers: int
    probe: str
    rps: float
    p50_ms: float
    p99_ms: float
    errors: str
    ratio: float = float("nan")
    ratio_healthz: float = float("nan")
    cpu_us: float = float("nan")  # user+system time of the server's processes per request
    cost: cost.Cost | None = None  # the rest of the costs: database CPU, statements, round trips
    cpu_ratio_readyz: float = float("nan")  # /readyz's CPU per request (server + database) over this one's
    cpu_ratio_healthz: float = float("nan")
    ratio_liveness: float = float("nan")  # req/s over /healthz's


def parse_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        return float("nan")
    return float(match[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[match[2]]


def group_cpu_seconds(pgid: int) -> float:
    """user+system CPU time of the live processes in a process group (the server and its workers)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After "(comm)": state ppid pgrp ... utime (12th) stime (13th).
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def wrk(url: str, probe: Probe, duration: float) -> tuple[float, float, float, str, int]:
    command = ["wrk", *WRK_ARGS, f"-d{max(1, round(duration))}s"]
    for name, value in probe.headers.items():
        command += ["-H", f"{name}: {value}"]
    if probe.script:
        command += ["-s", probe.script[0], url + probe.path, "--", *probe.script[1:]]
    else:
        command.append(url + probe.path)
    out = subprocess.run(command, capture_output=True, text=True, timeout=duration + 30, check=True).stdout
    rps = float(m[1]) if (m := re.search(r"Requests/sec:\s+([\d.]+)", out)) else 0.0
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.M))
    errors = []
    if m := re.search(r"Socket errors: (.*)", out):
        errors.append(m[1])
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        errors.append(f"non-2xx {m[1]}")
    count = int(m[1]) if (m := re.search(r"(\d+) requests in", out)) else 0
    p50, p99 = parse_ms(latency.get("50", "")), parse_ms(latency.get("99", ""))
    return rps, p50, p99, "; ".join(errors) or "0", count


def check_answers(url: str, targets: Targets, selected: list[Probe]) -> None:
    """Every probe answers 2xx once before it is timed (a 4xx would be fast and wrong)."""
    import httpx

    with httpx.Client(base_url=url, timeout=60) as client:
        for probe in selected:
            if probe.script and probe.script[0].endswith("get_items.lua"):
                first = Path(probe.script[1]).read_text().split("\n", 1)[0]
                bearer = {"Authorization": f"Bearer {probe.script[2]}"}
                response = client.get(probe.path + first, headers=bearer)
            elif probe.script:
                pair = Path(probe.script[1]).read_text().split("\n", 1)[0].split()
                body = {"sourceItemId": pair[0], "targetItemId": pair[1], "dependencyType": "depends_on"}
                response = client.post(
                    probe.path,
                    json={**body, "riskLevel": "low"},
                    headers={"Authorization": f"Bearer {pair[2] if len(pair) > 2 else targets.token}"},
                )
            else:
                response = client.get(probe.path, headers=probe.headers)
            if response.status_code >= 300:
                raise RuntimeError(f"{probe.name}: {response.status_code} {response.text[:300]}")


@dataclass
class Served:
    """One source tree's server on its own copy of the database, and what its requests need."""

    label: str
    server: Server
    targets: Targets
    selected: list[Probe]
    runs: dict[str, list[Measure]] = field(default_factory=dict)


def bench_config(
    backend: str,
    workers: int,
    copies: list[tuple[str, Targets, Path | None]],
    only: str,
    duration: float,
    rounds: int = 1,
) -> list[Measure]:
    """Every selected probe on a server per ``copies`` entry (database URL, its targets, the
    source tree or None for this one), all serving at once; each probe runs on every server
    in turn, the order of servers reversed each round, hello world first and last. With
    ``rounds`` > 1 each figure is the mean of its runs: on a busy machine a probe and its
    floor, and the two sources, then see the same load on average."""
    served: list[Served] = []
    try:
        for db_url, targets, source in copies:
            selected = [p for p in probes(targets) if p.path == "/hello" or re.search(only, p.name)]
            label = backend + (" (compared)" if source is not None else "")
            served.append(Served(label, Server(db_url, workers, source), targets, selected))
        for one in served:
            check_answers(one.server.url, one.targets, one.selected)
            for probe in one.selected:
                wrk(one.server.url, probe, 1)  # warm-up: connections, caches, lazy imports
        count = len(served[0].selected)
        order = [k for _ in range(rounds) for k in range(count)] + [0]  # hello world last too
        for step, k in enumerate(order):
            turn = served if (step // count) % 2 == 0 else served[::-1]
            for one in turn:
                measure(one, one.selected[k], backend, workers, duration)
    finally:
        for one in served:
            one.server.stop()
            log = one.server.stderr()
            one.server.log.close()
            if "Traceback" in log:
                print(log[-3000:], file=sys.stderr)
    return [result for one in served for result in summarize(one, workers)]


def measure(one: Served, probe: Probe, backend: str, workers: int, duration: float) -> None:
    before = one.server.meter.snapshot()
    rps, p50, p99, errors, count = wrk(one.server.url, probe, duration)
    spent = one.server.meter.cost(before, one.server.meter.snapshot(), count)
    one.runs.setdefault(probe.name, []).append(
        Measure(one.label, workers, probe.name, rps, p50, p99, errors, cpu_us=spent.server_us, cost=spent)
    )
    db = "" if spent.db_us is None else f" + db {spent.db_us:5.0f}"
    print(
        f"# {one.label:22} w={workers} {probe.name:34} {rps:8.0f} req/s  p50 {p50:7.2f} ms  "
        f"p99 {p99:8.2f} ms  cpu {spent.server_us:5.0f}{db} us/req  "
        f"{spent.statements:.2f} stmts, {spent.round_trips:.2f} trips/req  errors {errors}",
        file=sys.stderr,
        flush=True,
    )


def mean_cost(costs: list[cost.Cost]) -> cost.Cost:
    def mean(name: str) -> float | None:
        values = [getattr(c, name) for c in costs]
        return None if any(v is None for v in values) else sum(values) / len(values)

    return cost.Cost(
        sum(c.requests for c in costs),
        *(
            mean(name)
            for name in (
                "server_us",
                "db_us",
                "statements",
                "round_trips",
                "connections",
                "sqlite_statements",
            )
        ),
    )


def summarize(one: Served, workers: int) -> list[Measure]:
    results = []
    for probe in one.selected:
        measured = one.runs[probe.name]
        errors = "; ".join(m.errors for m in measured if m.errors != "0") or "0"
        spent = mean_cost([m.cost for m in measured])
        results.append(
            Measure(
                one.label,
                workers,
                probe.name,
                sum(m.rps for m in measured) / len(measured),
                sum(m.p50_ms for m in measured) / len(measured),
                sum(m.p99_ms for m in measured) / len(measured),
                errors,
                cpu_us=spent.server_us,
                cost=spent,
            )
        )
    first = results[0]
    readyz = next((r for r in results if r.probe.startswith("/readyz")), None)
    healthz = next((r for r in results if r.probe.startswith("/healthz")), None)
    for result in results:
        result.ratio = result.rps / first.rps if first.rps else float("nan")
        if readyz is not None and readyz.rps:
            result.ratio_healthz = result.rps / readyz.rps
            result.cpu_ratio_readyz = readyz.cost.total_us / result.cost.total_us
        if healthz is not None and healthz.rps:
            result.ratio_liveness = result.rps / healthz.rps
            result.cpu_ratio_healthz = healthz.cost.total_us / result.cost.total_us
    return results


def _figure(value: float | None, digits: int = 0) -> str:
    return "-" if value is None or value != value else f"{value:,.{digits}f}"


def table(results: list[Measure]) -> str:
    lines = [
        "| backend | workers | request | req/s | p50 ms | p99 ms | vs hello world | vs /readyz "
        "| server CPU µs/req | wrk errors |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.backend} | {r.workers} | {r.probe} | {r.rps:,.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | "
            f"{r.ratio:.0%} | {r.ratio_healthz:.2f} | {r.cpu_us:,.0f} | {r.errors} |"
        )
    return "\n".join(lines)


def cost_table(results: list[Measure]) -> str:
    """The costs per request of the same run, and the ratios to the floors in CPU and in req/s
    (a floor's cost over the request's: 1.00 is as cheap as the floor)."""
    lines = [
        "| backend | workers | request | server CPU µs/req | database CPU µs/req | statements/req "
        "| round trips/req | SQLite statements/req | CPU vs /readyz | req/s vs /readyz "
        "| CPU vs /healthz | req/s vs /healthz |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        c = r.cost
        lines.append(
            f"| {r.backend} | {r.workers} | {r.probe} | {_figure(c.server_us)} | {_figure(c.db_us)} | "
            f"{_figure(c.statements, 2)} | {_figure(c.round_trips, 2)} | "
            f"{_figure(c.sqlite_statements or None, 2)} | "
            f"{_figure(r.cpu_ratio_readyz, 2)} | "
            f"{_figure(r.ratio_healthz, 2)} | {_figure(r.cpu_ratio_healthz, 2)} | "
            f"{_figure(r.ratio_liveness, 2)} |"
        )
    return "\n".join(lines)


def write_section(path: Path, text: str) -> None:
    """Replace this script's section of ``path`` (or append it); other sections stay as they are."""
    content = path.read_text() if path.exists() else "# Benchmarks\n"
    start = content.find(SECTION + "\n")
    if start < 0:
        content = content.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    else:
        following = content.find("\n## ", start + len(SECTION))
        end = len(content) if following < 0 else following + 1
        content = (
            content[:start] + text.rstrip("\n") + "\n" + ("\n" + content[end:] if following >= 0 else "")
        )
    path.write_text(content)


def main() -> None:
    global THREADS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved runs of every probe, averaged")
    parser.add_argument("--only", default="", help="regex on request names (hello world always runs)")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sowctl-bench",
    )
    parser.add_argument("--write", type=Path, help="record the table in this markdown file")
    parser.add_argument(
        "--compare", type=Path, help="also serve the sowctl package of this source tree, interleaved"
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # internal: host a server on this database
    parser.add_argument("--server-workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--server-threads", type=int, default=THREADS, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=THREADS, help="threads per worker (serve --threads)")
    ns = parser.parse_args()
    if ns.serve:
        run_server(ns)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install -y wrk)")
    THREADS = ns.threads  # the servers this run starts take it from here

    backends = [b.strip() for b in ns.backends.split(",") if b.strip()]
    worker_counts = [int(w) for w in ns.workers.split(",")]
    load_before = os.getloadavg()[0]
    results: list[Measure] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for backend in backends:
            template = str(sqlite_template(ns.cache_dir)) if backend == "sqlite" else pg_template(ns.pg_url)
            for workers in worker_counts:
                sources = [None, ns.compare.resolve()] if ns.compare else [None]
                names = [f"{RUN_DB}_{k}" for k in range(len(sources))]
                try:
                    copies = []
                    for name, source in zip(names, sources, strict=True):
                        db_url = fresh_copy(backend, template, ns.pg_url, workdir, name)
                        (workdir / name).mkdir(exist_ok=True)
                        targets = prepare_run(db_url, workdir / name)
                        if backend != "sqlite":
                            vacuum(db_url)
                        copies.append((db_url, targets, source))
                    results += bench_config(backend, workers, copies, ns.only, ns.duration, ns.rounds)
                finally:
                    if backend != "sqlite":
                        for name in names:
                            drop_run_database(ns.pg_url, name)

    command = "python bench/bench_throughput.py " + shlex.join(sys.argv[1:])
    header = (
        f"`{command.strip()}` ({date.today().isoformat()}; {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; wrk {' '.join(WRK_ARGS)} "
        f"-d{ns.duration:g}s on loopback, {ns.rounds} interleaved round(s) averaged, sharing the CPUs "
        f"with the server; sowctl serve's engine (granian), "
        f"{THREADS} threads per worker; 1-minute load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after)."
    )
    if ns.compare:
        header += f' "(compared)": the sowctl of `{ns.compare}`, served the same way.'
    text = table(results) + "\n\nCosts per request, same run:\n\n" + cost_table(results)
    print(header + "\n\n" + text)
    if ns.write:
        write_section(ns.write, f"{SECTION}\n\n{header}\n\n{text}\n")


if __name__ == "__main__":
    main()
