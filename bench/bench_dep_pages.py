#!/usr/bin/env python3
"""A page of dependencies (GET /api/dependencies, as the server runs it) at page 1 and deep pages.

    python bench/bench_dep_pages.py                  # 20,000 dependencies, pages 1, 50, 100, 200
    python bench/bench_dep_pages.py --db postgresql://postgres@127.0.0.1:5432/bench_deps

Data: ``gen_dataset.big_dataset(1, 5000, DEPS)`` imported into a fresh database (SQLite
file in a temporary directory, or the empty PostgreSQL database named). Each page is
``operations deps.list`` with a bearer caller of the dataset's organization (the server's
path: the organization filter, ``limit=100``), with and without ``sowId``; the figure is the
median of ``--runs`` calls in process (no HTTP), in milliseconds. On PostgreSQL the tables are
vacuumed and analyzed after the import, as autovacuum does soon after a bulk insert (before it,
the planner has no statistics for the new rows).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _gen_dataset():
    spec = importlib.util.spec_from_file_location("gen_dataset", ROOT / "bench" / "gen_dataset.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deps", type=int, default=20_000)
    parser.add_argument("--pages", default="1,50,100,200")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--db", default=None, help="an empty PostgreSQL database (default: a SQLite file)")
    args = parser.parse_args(argv)

    from sowctl import operations
    from sowctl.services.access import Caller
    from sowctl.services.dataset.importer import import_dataset
    from sowctl.storage.database import open_database

    url = args.db or str(Path(tempfile.mkdtemp()) / "deps.db")
    open_database(url)
    data = _gen_dataset().big_dataset(1, 5000, args.deps)
    import_dataset(data)
    if args.db:  # as autovacuum does after a bulk insert: statistics and the visibility map
        from sowctl.storage import models as m

        m.database_proxy.obj.execute_sql("VACUUM ANALYZE")
    org = data["organizations"][0]["id"]
    sow = data["sows"][0]["id"]
    caller = Caller(user_id="bench", organization_id=org, role="admin")
    op = operations.get("deps.list")
    print(f"{len(data['dependencies']):,} dependencies, limit 100, median of {args.runs} (ms)")
    for label, query in (("all", {}), ("sowId", {"sowId": sow})):
        figures = []
        for page in (int(p) for p in args.pages.split(",")):
            times = []
            for _ in range(args.runs):
                request = operations.build_request(op, caller, {}, query, offset=(page - 1) * 100, limit=100)
                started = time.perf_counter()
                result = op.run(request)
                times.append((time.perf_counter() - started) * 1000)
                assert len(result.body) == 100, (page, len(result.body))
            figures.append(f"page {page}: {statistics.median(times):.1f}")
        print(f"{label:6} " + ", ".join(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
