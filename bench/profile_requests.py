#!/usr/bin/env python3
"""Where a request's time goes: the WSGI app called in process, no network, no server.

    python bench/profile_requests.py                    # SQLite copy of the throughput dataset
    python bench/profile_requests.py --db postgresql://postgres@127.0.0.1:5432/sowctl_bench_run
    python bench/profile_requests.py --top 25           # also print cProfile's top functions

Uses the throughput benchmark's dataset (``bench_throughput.sqlite_template``; on
PostgreSQL, name a copy of its template database). Each request is called ``--repeat``
times through ``create_app``'s WSGI callable with ``serve --quiet`` settings: first
plainly (mean µs per request, the figure the ratios use), then under cProfile, whose
cumulative times are split into the phases below. cProfile slows Python code more than
the database, so the phase shares are indicative; the plain figures are not affected.

Phases (cumulative time of the functions named, which never call one another):

* authentication: ``credentials.authenticate_token`` / ``authenticate_key`` (hash + one query)
  and the Group B rate counter;
* query building: peewee turning query objects into SQL (``Context.sql``/``query``);
* queries: ``Database.execute_sql`` (the driver and the database) and fetching rows;
* validation: ``operations.build_request`` (query string and body through Pydantic);
* serialisation: building response models (``to_out``) and dumping them (``dump``), ``json_bytes``;
* logging: the server's log lines (none on a successful request with ``--quiet``);
* the rest: Bottle routing, the WSGI envelope, the handler's own Python.
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


# (phase, file suffix, function name): cumulative time of each match counts for the phase.
PHASES = [
    ("authentication", "services/credentials.py", "authenticate_token"),
    ("authentication", "services/credentials.py", "authenticate_key"),
    ("authentication", "services/ratelimit.py", "hit"),
    ("query building", "peewee.py", "sql"),
    ("queries", "peewee.py", "execute_sql"),
    ("queries", "~", "<method 'fetchall' of 'sqlite3.Cursor' objects>"),
    ("queries", "~", "<method 'fetchone' of 'sqlite3.Cursor' objects>"),
    ("queries", "~", "<method 'fetchall' of 'psycopg2.extensions.cursor' objects>"),
    ("queries", "~", "<method 'fetchone' of 'psycopg2.extensions.cursor' objects>"),
    ("validation", "operations/__init__.py", "build_request"),
    ("serialisation", "services/items.py", "to_out"),
    ("serialisation", "services/dependencies.py", "to_out"),
    ("serialisation", "schemas/common.py", "dump"),
    ("serialisation", "services/item_pages.py", "dump_page"),
    ("serialisation", "server/http.py", "json_bytes"),
    ("logging", "server/responses.py", "log"),
]


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


def phase_split(profile: cProfile.Profile) -> tuple[dict[str, float], float]:
    stats = pstats.Stats(profile)
    total = max(entry[3] for entry in stats.stats.values())  # the outermost call's cumulative time
    split: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        for phase, suffix, wanted in PHASES:
            if name == wanted and ((suffix == "~" and filename == "~") or filename.endswith(suffix)):
                split[phase] = split.get(phase, 0.0) + ct
    # peewee's Context.sql recurses: count only the outermost calls (callers outside sql).
    return split, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a copy of the SQLite benchmark dataset)")
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--top", type=int, default=0, help="print cProfile's N most expensive functions")
    parser.add_argument("--only", default="", help="substring of the request names to run")
    args = parser.parse_args()

    bench = _throughput()
    from sowctl.server.app import create_app
    from sowctl.server.settings import ServerSettings

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
        print(f"# {len(requests)} requests, {args.repeat} calls each, in process (no network)\n")
        lines = [
            "| request | µs per request | auth | query building | queries | validation | "
            "serialisation | logging | the rest |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, method, path, headers in requests:
            status, _ = wsgi_call(app, method, path, headers)
            if not status.startswith("200"):
                raise SystemExit(f"{name}: {status}")
            started = time.perf_counter()
            for _ in range(args.repeat):
                wsgi_call(app, method, path, headers)
            plain = (time.perf_counter() - started) / args.repeat * 1e6
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.repeat):
                wsgi_call(app, method, path, headers)
            profile.disable()
            split, total = phase_split(profile)
            shares = [split.get(phase, 0.0) / total for phase in PHASE_NAMES]
            rest = max(0.0, 1 - sum(shares))
            cells = " | ".join(f"{share:.0%}" for share in [*shares, rest])
            lines.append(f"| {name} | {plain:,.0f} | {cells} |")
            if args.top:
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.top)
                print(f"## {name}\n{out.getvalue()}")
        print("\n".join(lines))


PHASE_NAMES = ["authentication", "query building", "queries", "validation", "serialisation", "logging"]


if __name__ == "__main__":
    main()
