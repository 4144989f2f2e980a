#!/usr/bin/env python3
"""The floor of a write on PostgreSQL: create dependency against its own statements, bare.

    python bench/pg_floor.py                          # 2 workers of 4 threads, 3 rounds of 5 s
    python bench/pg_floor.py --show                   # only print one request's statements

What can sowctl's create dependency reach on this machine? This script learns the exact
statements one ``POST /api/dependencies`` runs, from sowctl itself: the application
(``create_app``, ``serve --quiet`` settings) is called in process, with every statement
Peewee sends recorded with its parameters, transactions' ``BEGIN``/``COMMIT`` included (the
second request's; the first one's ``PREPARE`` statements are run once per connection,
as the server runs them once per connection). The floor then runs exactly those statements
with psycopg2, in the same transactions, on as many connections as the server has
(``--workers`` processes of ``--threads`` threads, one connection each), the pair of items,
the new dependency's id and the request's id changed for every request, and nothing else:
no HTTP, no parsing, no validation, no response.

Both run on the same fresh copy of the throughput benchmark's database
(``bench_throughput.pg_template``), interleaved: the floor for ``--duration`` seconds, then
sowctl's server under ``wrk -t2 -c32`` with ``bench/post_dependencies.lua`` (the pairs of the
throughput benchmark's "create dependency" row), the order reversed each round. Reported:
requests per second, and the cost per request from ``bench/cost.py`` (CPU of the client or
server processes, of the database backends, statements and round trips), for each side and
as sowctl's share of the floor.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import ModuleType

import cost

ROOT = Path(__file__).resolve().parent.parent
FLOOR_DB = "sowctl_bench_floor"  # each side on its own copy: the floor's ranks are not kept
SERVER_DB = "sowctl_bench_floor_server"
RECORDED = 40  # requests recorded after the first: the floor replays them in turn, as their mix of paths


def _throughput() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_throughput", ROOT / "bench" / "bench_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_throughput"] = module
    spec.loader.exec_module(module)
    return module


# --- learning one request's statements ------------------------------------------------------


def record(db_url: str, token: str, pairs: list[tuple[str, str]]) -> dict:
    """The statements of two create-dependency requests made in process, with parameters:
    {"setup": the first one's PREPAREs, "request": the second one's, "pair": its items,
    "ids": the values it made up (dependency id, ...)}."""
    import io
    import json

    import peewee as pw

    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings

    recorded: list[tuple[str, tuple]] = []

    def wrap(cls: type, name: str, text) -> None:
        original = cls.__dict__[name]

        def recording(self, *args, **kwargs):
            recorded.append(text(args))
            return original(self, *args, **kwargs)

        setattr(cls, name, recording)

    for cls in (pw.Database, pw.SqliteDatabase, pw.PostgresqlDatabase):
        if "_execute_cursor" in cls.__dict__:
            wrap(
                cls, "_execute_cursor", lambda args: (args[0], tuple(args[1] or ()) if len(args) > 1 else ())
            )
        if "begin" in cls.__dict__:
            wrap(cls, "begin", lambda args: ("BEGIN", ()))
        for name in ("commit", "rollback"):
            if name in cls.__dict__:
                wrap(cls, name, lambda args, name=name: (name.upper(), ()))

    settings = ServerSettings(rate_per_minute=10**9, rate_per_day=10**9, access_log=False)
    app = create_app(db_url, settings)
    requests = []
    for source, target in pairs:
        recorded.clear()
        body = json.dumps(
            {
                "sourceItemId": source,
                "targetItemId": target,
                "dependencyType": "depends_on",
                "riskLevel": "low",
            }
        ).encode()
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/api/dependencies",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
        }
        status: list[str] = []
        answer = b"".join(app(environ, lambda s, h, e=None, seen=status: seen.append(s)))
        if not status or not status[0].startswith("201"):
            raise SystemExit(f"the recorded request failed: {status} {answer[:300]!r}")
        requests.append((list(recorded), json.loads(answer)["id"]))
    setup = [entry for entry in requests[0][0] if entry[0].lstrip().upper().startswith("PREPARE")]
    return {
        "setup": setup,
        "requests": [
            {"request": statements, "pair": pair, "ids": [made]}
            for (statements, made), pair in zip(requests[1:], pairs[1:], strict=True)
        ],
    }


def substitute(statements: list[tuple[str, tuple]], values: dict) -> list[tuple[str, tuple]]:
    """The statements with every parameter found in ``values`` replaced (exact matches)."""
    return [
        (sql, tuple(values.get(p, p) if isinstance(p, str) else p for p in params))
        for sql, params in statements
    ]


# --- the floor: those statements, bare, on the server's number of connections -----------------


def replay(
    url: str, plan_file: Path, pairs_file: Path, threads: int, duration: float, start: int, stride: int
) -> int:
    """One worker: ``threads`` connections, each running the recorded request for
    ``duration`` seconds over its share of the pairs; prints the requests made."""
    import psycopg2

    plan = pickle.loads(plan_file.read_bytes())
    pairs = [line.split()[:2] for line in pairs_file.read_text().splitlines() if line.strip()]
    done = [0] * threads
    backend_cpu = [0.0] * threads
    ready = threading.Barrier(threads + 1)
    begin = [0.0]

    def run(k: int) -> None:
        connection = psycopg2.connect(url)
        connection.autocommit = True  # BEGIN and COMMIT are statements of the plan, as Peewee sends them
        cursor = connection.cursor()
        for sql, params in plan["setup"]:
            cursor.execute(sql, params)
        backend = connection.get_backend_pid()
        ready.wait()
        backend_start = cost.cpu_seconds(backend) or 0.0
        position = start + k
        deadline = begin[0] + duration
        while time.perf_counter() < deadline:
            pair = pairs[position % len(pairs)]
            recorded = plan["requests"][position % len(plan["requests"])]
            position += stride
            values = {recorded["pair"][0]: pair[0], recorded["pair"][1]: pair[1]}
            values.update({made: str(uuid.uuid4()) for made in recorded["ids"]})
            for sql, params in substitute(recorded["request"], values):
                cursor.execute(sql, params)
                if cursor.description is not None:
                    cursor.fetchall()
            done[k] += 1
        backend_cpu[k] = (cost.cpu_seconds(backend) or 0.0) - backend_start
        connection.close()

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    begin[0] = time.perf_counter()
    cpu = time.process_time()
    ready.wait()
    for worker in workers:
        worker.join()
    return sum(done), time.process_time() - cpu, sum(backend_cpu)


def run_floor(url: str, plan_file: Path, pairs_file: Path, workers: int, threads: int, duration: float):
    """The floor in a process of its own, which forks its workers: req/s and ``cost.Cost``."""
    command = [sys.executable, __file__, "--replay", url, str(plan_file), str(pairs_file)]
    command += [str(workers), str(threads), str(duration)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    made, client, database = json.loads(out.strip().splitlines()[-1])
    recorded = pickle.loads(plan_file.read_bytes())["requests"]
    statements = sum(cost._statements_in(sql) for r in recorded for sql, _ in r["request"]) / len(recorded)
    trips = sum(len(r["request"]) for r in recorded) / len(recorded)
    n = max(made, 1)
    return made / duration, cost.Cost(made, client / n * 1e6, database / n * 1e6, statements, trips, 0.0)


def replay_main(args: list[str]) -> None:
    url, plan_file, pairs_file, workers, threads, duration = args
    children = []
    for w in range(int(workers)):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            made = replay(
                url,
                Path(plan_file),
                Path(pairs_file),
                int(threads),
                float(duration),
                w * int(threads),
                int(workers) * int(threads),
            )
            os.write(write, json.dumps(made).encode())
            os._exit(0)
        os.close(write)
        children.append((pid, read))
    totals = [0, 0.0, 0.0]
    for pid, read in children:
        figures = json.loads(os.read(read, 256) or b"[0, 0, 0]")
        totals = [a + b for a, b in zip(totals, figures, strict=True)]
        os.waitpid(pid, 0)
    print(json.dumps(totals))


# --- the comparison ---------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--replay":
        replay_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="threads (connections) per worker")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print one request's statements and stop")
    args = parser.parse_args()
    bench = _throughput()
    bench.THREADS = args.threads
    template = bench.pg_template(args.pg_url)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        try:
            copies = {}
            for side, name in (("floor", FLOOR_DB), ("sowctl", SERVER_DB)):
                url = bench.fresh_copy("postgresql", template, args.pg_url, workdir, name)
                (workdir / side).mkdir()
                copies[side] = (url, bench.prepare_run(url, workdir / side))
                bench.vacuum(url)
            url, targets = copies["floor"]
            pairs = [tuple(line.split()[:2]) for line in targets.pairs_file.read_text().splitlines()]
            plan = record(url, targets.token, pairs[-(RECORDED + 1) :])
            if args.show:
                for sql, params in plan["setup"] + [("-- the request", ())] + plan["requests"][0]["request"]:
                    print(sql, params)
                return
            plan_file = workdir / "plan.pickle"
            plan_file.write_bytes(pickle.dumps(plan))
            compare(bench, copies, plan, plan_file, args)
        finally:
            for name in (FLOOR_DB, SERVER_DB):
                bench.drop_run_database(args.pg_url, name)


def compare(bench, copies: dict, plan: dict, plan_file: Path, args) -> None:
    floor_url, floor_targets = copies["floor"]
    url, targets = copies["sowctl"]
    probe = bench.Probe(
        "create dependency",
        "/api/dependencies",
        script=[str(ROOT / "bench" / "post_dependencies.lua"), str(targets.pairs_file), targets.token, "2"],
    )
    server = bench.Server(url, args.workers)
    runs: dict[str, list[tuple[float, cost.Cost]]] = {"floor": [], "sowctl": []}
    load = [os.getloadavg()[0]]
    try:
        bench.wrk(server.url, probe, 3)  # warm-up: the organization's ranks computed, connections
        for round_ in range(args.rounds):
            for side in ("floor", "sowctl") if round_ % 2 == 0 else ("sowctl", "floor"):
                if side == "floor":
                    rps, spent = run_floor(
                        floor_url,
                        plan_file,
                        floor_targets.pairs_file,
                        args.workers,
                        args.threads,
                        args.duration,
                    )
                else:
                    before = server.meter.snapshot()
                    rps, _p50, _p99, errors, count = bench.wrk(server.url, probe, args.duration)
                    if errors != "0":
                        raise SystemExit(f"sowctl: wrk errors {errors}")
                    spent = server.meter.cost(before, server.meter.snapshot(), count)
                runs[side].append((rps, spent))
                load.append(os.getloadavg()[0])
                print(
                    f"# {side:7} {rps:7.0f} req/s  cpu {spent.server_us:5.0f} "
                    f"+ db {spent.db_us or 0:5.0f} us/req  {spent.statements or 0:.2f} stmts  "
                    f"{spent.round_trips or 0:.2f} trips",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        server.stop()
    report(plan, runs, args, load)


def report(plan: dict, runs: dict, args, load: list[float]) -> None:
    rows = []
    means = {}
    for side, measured in runs.items():
        # Totals over the runs, not means of per-run figures: a run in which a stall let
        # few requests through still counts all the CPU it spent.
        requests = sum(c.requests for _, c in measured)
        rps = requests / (args.duration * len(measured))
        client = sum(c.server_us * max(c.requests, 1) for _, c in measured) / max(requests, 1)
        db = sum((c.db_us or 0.0) * max(c.requests, 1) for _, c in measured) / max(requests, 1)
        means[side] = (rps, client, db)
        shown_trips = sum((c.round_trips or 0.0) * c.requests for _, c in measured) / max(requests, 1)
        shown_statements = sum((c.statements or 0.0) * c.requests for _, c in measured) / max(requests, 1)
        rows.append(
            f"| {side} | {rps:,.0f} | {client:,.0f} | {db:,.0f} | {client + db:,.0f} | "
            f"{shown_statements:.2f} | {shown_trips:.2f} |"
        )
    floor, ours = means["floor"], means["sowctl"]
    print(
        f"`python bench/pg_floor.py --workers {args.workers} --threads {args.threads} "
        f"--duration {args.duration:g} --rounds {args.rounds}` "
        f"({time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} CPUs, load average "
        f"{min(load):.1f} to {max(load):.1f})\n"
    )
    print(
        "| side | req/s | client or server CPU µs/req | database CPU µs/req | total CPU µs/req "
        "| statements/req | round trips/req |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(
        f"\nsowctl / floor: {ours[0] / floor[0]:.2f} of the floor's req/s; the floor's CPU per request is "
        f"{(floor[1] + floor[2]) / (ours[1] + ours[2]):.2f} of sowctl's (server + database), the database's "
        f"alone {floor[2] / ours[2]:.2f}."
    )


if __name__ == "__main__":
    main()
