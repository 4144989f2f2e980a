#!/usr/bin/env python3
"""Where a request's time goes: the WSGI app called in process, no network, no server.

    python bench/profile_requests.py                    # SQLite copy of the throughput dataset
    python bench/profile_requests.py --db postgresql://postgres@127.0.0.1:5432/sowctl_bench_run
    python bench/profile_requests.py --top 25           # also print cProfile's top functions
    python bench/profile_requests.py --top 25 --sort tottime   # ... by their own time
    PYTHONPATH=/path/to/older/checkout python bench/profile_requests.py   # the same for another sowctl

Uses the throughput benchmark's dataset (``bench_throughput.sqlite_template``; on
PostgreSQL, name a copy of its template database). Each request is called ``--repeat``
times through ``create_app``'s WSGI callable with ``serve --quiet`` settings: first as
it is (µs per request, wall and this process's CPU), then with the functions below
wrapped in timers, each moment counted for the innermost phase running (a token
lookup's query counts as a query), as shares of that second run: shares of CPU time on
SQLite (the database runs in the process, and CPU time hardly moves with the machine's
load), of wall time on PostgreSQL (its work is in the server's process). Not
included: the WSGI server (gunicorn's HTTP parsing and its access log line, off with
``--quiet``), which ``bench_throughput.py``'s hello world measures.

Phases:

* authentication: ``credentials.authenticate_token`` / ``authenticate_key`` (hashing the
  secret, building the caller), ``token_reads.item_for_token`` (get item: the token and the
  item in one statement, which counts as a query) and the Group B rate counter;
* query building: peewee turning query objects into SQL (``Database.execute``);
* queries: ``Database.execute_sql`` (the driver and the database, prepared or not);
  fetching the rows counts for whoever fetches them;
* validation: ``operations.build_request`` (query string and body through Pydantic);
* serialisation: response models built (``to_out``) and dumped (``dump``,
  ``operations.items.items_json``), and ``json_bytes``;
* logging: the server's own log lines (none on a successful request);
* the rest: Bottle routing and responses, the handler's own Python, fetching rows.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _throughput() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_throughput", ROOT / "bench" / "bench_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_throughput"] = module
    spec.loader.exec_module(module)
    return module


# (phase, module, function): time inside these calls counts for the phase, minus the time
# of calls of another phase inside them (a token lookup's query counts as a query).
PHASES = [
    ("authentication", "sowctl.services.credentials", "authenticate_token"),
    ("authentication", "sowctl.services.credentials", "authenticate_key"),
    ("authentication", "sowctl.services.token_reads", "item_for_token"),  # get item: token and item at once
    ("authentication", "sowctl.services.ratelimit", "hit"),
    ("query building", "peewee", "Database.execute"),
    ("queries", "peewee", "Database.execute_sql"),
    ("validation", "sowctl.operations", "build_request"),
    ("serialisation", "sowctl.services.items", "to_out"),
    ("serialisation", "sowctl.services.dependencies", "to_out"),
    ("serialisation", "sowctl.operations.items", "items_json"),
    ("serialisation", "sowctl.schemas.common", "dump"),
    ("serialisation", "sowctl.server.http", "json_bytes"),
    ("logging", "sowctl.server.responses", "log"),
]
PHASE_NAMES = ["authentication", "query building", "queries", "validation", "serialisation", "logging"]


class Phases:
    """Wraps the PHASES functions to time them; each moment counts for the innermost one."""

    def __init__(self, clock) -> None:
        self.clock = clock
        self.totals = dict.fromkeys(PHASE_NAMES, 0.0)
        self._stack: list[list[float]] = []  # [start, time of nested phases]

    def install(self) -> None:
        import importlib

        for phase, module_name, qualname in PHASES:
            owner, _, name = qualname.rpartition(".")
            try:  # an older sowctl (to compare with) may lack some of them
                module = importlib.import_module(module_name)
                target = getattr(module, owner) if owner else module
                original = getattr(target, name)
            except (ImportError, AttributeError):
                continue
            wrapped = self._wrap(phase, original)
            setattr(target, name, wrapped)
            if not owner:  # names imported elsewhere with "from module import name"
                for other in list(sys.modules.values()):
                    if (
                        getattr(other, "__name__", "").startswith("sowctl")
                        and getattr(other, name, None) is original
                    ):
                        setattr(other, name, wrapped)

    def _wrap(self, phase: str, function):
        stack, totals, clock = self._stack, self.totals, self.clock

        def timed(*args, **kwargs):
            frame = [clock(), 0.0]
            stack.append(frame)
            try:
                return function(*args, **kwargs)
            finally:
                stack.pop()
                spent = clock() - frame[0]
                totals[phase] += spent - frame[1]
                if stack:
                    stack[-1][1] += spent

        return timed


def wsgi_call(app, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[str, bytes]:
    target, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": target,
        "QUERY_STRING": query,
        "SERVER_NAME": "bench",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)) if body else "",
        "CONTENT_TYPE": "application/json" if body else "",
    }
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    status: list[str] = []

    def start_response(line: str, _headers: list, _exc_info=None) -> None:
        status.append(line)

    chunks = app(environ, start_response)
    payload = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return status[0], payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a copy of the SQLite benchmark dataset)")
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--top", type=int, default=0, help="print cProfile's N most expensive functions")
    parser.add_argument("--sort", default="cumulative", help="cProfile's order for --top (tottime: own time)")
    parser.add_argument("--only", default="", help="substring of the request names to run")
    args = parser.parse_args()

    bench = _throughput()
    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sowctl-bench"
        url = args.db or bench.fresh_copy("sqlite", str(bench.sqlite_template(cache)), "", workdir)
        targets = bench.prepare_run(url, workdir)
        settings = ServerSettings(rate_per_minute=10**9, rate_per_day=10**9, access_log=False)
        app = create_app(url, settings)
        bearer = {"Authorization": f"Bearer {targets.token}"}
        sow = bench.LIST_SOW
        requests = [
            ("/healthz", "GET", "/healthz", {}),
            ("get item", "GET", f"/api/items/{targets.item_id}", bearer),
            ("list items page 1 of 100", "GET", f"/api/sow/{sow}/items?page=1&limit=100", bearer),
            ("list items page 50 of 100", "GET", f"/api/sow/{sow}/items?page=50&limit=100", bearer),
        ]
        requests = [r for r in requests if args.only in r[0]]
        # SQLite runs in this process: its CPU time is the whole cost, and hardly changes with
        # the machine's load. PostgreSQL's work is in another process: wall time.
        on_sqlite = not url.startswith(("postgres", "cockroach", "crdb"))
        clock = time.process_time if on_sqlite else time.perf_counter
        print(
            f"# {len(requests)} requests, {args.repeat} calls each, in process (no network); "
            f"phase shares of {'CPU' if on_sqlite else 'wall'} time\n"
        )
        lines = [
            "| request | µs per request | CPU µs per request | auth | query building | queries "
            "| validation | "
            "serialisation | logging | the rest |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        plain: dict[str, float] = {}
        plain_cpu: dict[str, float] = {}  # this process's CPU: all of it on SQLite, load-proof
        for name, method, path, headers in requests:  # first without any instrument
            status, _ = wsgi_call(app, method, path, headers)
            if not status.startswith("200"):
                raise SystemExit(f"{name}: {status}")
            started, cpu = time.perf_counter(), time.process_time()
            for _ in range(args.repeat):
                wsgi_call(app, method, path, headers)
            plain[name] = (time.perf_counter() - started) / args.repeat * 1e6
            plain_cpu[name] = (time.process_time() - cpu) / args.repeat * 1e6
        phases = Phases(clock)
        phases.install()
        for name, method, path, headers in requests:
            phases.totals.update(dict.fromkeys(PHASE_NAMES, 0.0))
            started = clock()
            for _ in range(args.repeat):
                wsgi_call(app, method, path, headers)
            total = clock() - started
            shares = [phases.totals[phase] / total for phase in PHASE_NAMES]
            cells = " | ".join(f"{share:.0%}" for share in [*shares, max(0.0, 1 - sum(shares))])
            lines.append(f"| {name} | {plain[name]:,.0f} | {plain_cpu[name]:,.0f} | {cells} |")
            if args.top:
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(args.repeat):
                    wsgi_call(app, method, path, headers)
                profile.disable()
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.top)
                print(f"## {name}\n{out.getvalue()}")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
