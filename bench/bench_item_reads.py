#!/usr/bin/env python3
"""What reading every item costs, by kind: CPU and statements per get item and list page.

    python bench/bench_item_reads.py                          # SQLite and PostgreSQL, this tree
    python bench/bench_item_reads.py --compare /tmp/main-src  # and another tree's sowctl, interleaved
    python bench/bench_item_reads.py --backends sqlite --write BENCHMARKS.md

``--compare DIR`` reads with DIR's ``sowctl`` package (``git archive main sowctl | tar -x
-C DIR`` gives the one before a change), each side on its own copy of the data, imported
by its own code; the sides run one after the other in every round, the order reversed
each round, so that both see the same load on average.

The dataset is ``gen_dataset.big_dataset(12, 100000, 0)``: 12 SOWs of 8,333 items, each
with 8 top-level requirements whose subtrees hold about 1,040 items (a nested requirement
and some 1,040 task items and sub-tasks), 8 nested requirements of about 520, and task
items. Dependencies do not change what an item read costs and are left out. It is
imported once per side and cached (``--cache-dir``: a SQLite file, a PostgreSQL database).

Each measurement runs in a child process (the side's ``sowctl`` on ``PYTHONPATH``), which
calls the core as a request does (``operations.call_local``, full rights) and reports per
request, for each item kind read once each over the whole dataset (top-level requirements
and nested ones read again until at least 2,000 requests, for a steady figure):

* ``cpu µs``: the child's CPU time (user + system) per request: the application's cost;
* ``db µs`` (PostgreSQL): the CPU time of the child's database backend (``/proc``);
* ``stmts``: statements sent per request (every one goes through ``execute_sql``).

``--reads write`` measures the writes that keep the counts instead: 500 task items created
under a nested requirement, their status changed, then deleted.

"every item" is the mean over all items of the dataset, each read once: what a client
reading the whole dataset item by item pays per request. "list page" is every page of
100 of every SOW. CPU time is counted only for the work done, so it holds on a busy
machine far better than requests per second (each line also gives the load average).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Reading every item kind"
DATASET = {"sows": 12, "items": 100_000, "deps": 0, "seed": 1, "today": date(2026, 1, 15)}
KINDS = ("task item", "nested requirement", "top-level requirement")
AT_LEAST = 2000  # requests per kind: the rarer kinds are read again until this many
PAGE = 100
WRITES = 500  # task items created, updated and deleted by --reads write
WRITE_KINDS = ("create task item", "update task status", "delete task item")


# --- the child: one side, one backend, one pass -------------------------------------------


def child(url: str, dataset_path: str, reads: str) -> dict:
    from sowctl import operations
    from sowctl.services.access import Caller
    from sowctl.storage import models as m
    from sowctl.storage.database import open_database

    database = open_database(url)
    if not m.Item.select().exists():
        from sowctl.services.dataset import import_dataset

        import_dataset(json.loads(Path(dataset_path).read_text()))
    counter = _count_statements(database)
    backend = _backend_cpu(database)
    local = Caller.local()
    rows = list(m.Item.select(m.Item.id, m.Item.type, m.Item.parent).tuples())
    by_kind: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for item_id, item_type, parent in rows:
        kind = (
            "task item"
            if item_type == "task_item"
            else "nested requirement"
            if parent
            else "top-level requirement"
        )
        by_kind[kind].append(item_id)

    def get(item_id: str) -> None:
        operations.call_local("items.get", local, {"itemId": item_id})

    for item_id in rows[:: max(1, len(rows) // 500)]:  # warm: caches, prepared statements
        get(item_id[0])
    import sowctl

    result = {
        "source": sowctl.__file__,
        "items": {kind: len(ids) for kind, ids in by_kind.items()},
        "kinds": {},
    }
    for kind, ids in by_kind.items() if "get" in reads else ():
        repeat = max(1, -(-AT_LEAST // len(ids))) if ids else 0
        result["kinds"][kind] = _measure([i for _ in range(repeat) for i in ids], get, counter, backend)
    sows = [sow.id for sow in m.Sow.select(m.Sow.id)]

    listing = operations.get("items.list")

    def page(key: tuple[str, int]) -> None:  # as a paged GET runs it (call_local is unpaged)
        request = operations.build_request(listing, local, {"sowId": key[0]}, None, offset=key[1], limit=PAGE)
        listing.run(request)

    pages = [(sow, offset) for sow in sows for offset in range(0, len(rows) // len(sows), PAGE)]
    if "list" in reads:
        result["kinds"]["list page"] = _measure(pages, page, counter, backend)
    if "write" in reads:
        result["kinds"].update(_writes(by_kind["nested requirement"][0], operations, local, counter, backend))
    database.close()
    return result


def _writes(parent: str, operations, local, counter: list[int], backend) -> dict:
    """What the writes that keep the counts cost: task items created under a nested
    requirement (three levels of items above each), their statuses changed, then deleted
    (the data is as it was after)."""
    from sowctl.storage import models as m

    sow = m.Item.get_by_id(parent).sow.id
    made: list[str] = []

    def create(n: int) -> None:
        body = {"title": f"bench {n}", "type": "task_item", "parentItemId": parent}
        made.append(operations.call_local("items.create", local, {"sowId": sow}, body=body)["id"])

    def update(item_id: str) -> None:
        operations.call_local("items.update", local, {"itemId": item_id}, body={"status": "completed"})

    def delete(item_id: str) -> None:
        operations.call_local("items.delete", local, {"itemId": item_id})

    figures = {"create task item": _measure(list(range(WRITES)), create, counter, backend)}
    figures["update task status"] = _measure(list(made), update, counter, backend)
    figures["delete task item"] = _measure(list(made), delete, counter, backend)
    return figures


def _measure(keys: list, call, counter: list[int], backend) -> dict:
    counter[0] = 0
    db_before = backend()
    wall, cpu = time.perf_counter(), time.process_time()
    for key in keys:
        call(key)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    db_cpu = backend() - db_before if db_before is not None else None
    n = len(keys)
    return {
        "requests": n,
        "cpu_us": cpu / n * 1e6,
        "wall_us": wall / n * 1e6,
        "db_us": None if db_cpu is None else db_cpu / n * 1e6,
        "statements": counter[0] / n,
    }


def _count_statements(database) -> list[int]:
    """Statements sent (``execute_sql``: every statement of the core, prepared ones too)."""
    counter = [0]
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        counter[0] += 1
        return original(sql, params, *args, **kwargs)

    database.execute_sql = counting  # prepared executions (PostgreSQL) go through it too
    return counter


def _backend_cpu(database):
    """A function giving the CPU seconds of this connection's PostgreSQL backend so far
    (None on SQLite, or when /proc cannot tell)."""
    import peewee as pw

    if not isinstance(database, pw.PostgresqlDatabase):
        return lambda: None
    pid = database.execute_sql("SELECT pg_backend_pid()").fetchone()[0]
    ticks = os.sysconf("SC_CLK_TCK")

    def seconds() -> float | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / ticks

    return seconds


# --- the parent: data, sides, rounds, the table --------------------------------------------


def _tree_key(source: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((source / "sowctl").rglob("*.py")):
        digest.update(str(path.relative_to(source)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _dataset_file(cache: Path, sows: int, items: int) -> Path:
    path = cache / f"item_reads_dataset_{sows}_{items}.json"
    if not path.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        from gen_dataset import big_dataset

        data = big_dataset(sows, items, DATASET["deps"], DATASET["seed"], DATASET["today"])
        path.write_text(json.dumps(data))
    return path


def _database(backend: str, key: str, cache: Path, pg_url: str) -> str:
    if backend == "sqlite":
        return str(cache / f"item_reads_{key}.db")
    import psycopg2

    name = f"sowctl_item_reads_{key}"
    parts = urlsplit(pg_url)
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()
    return urlunsplit(parts._replace(path="/" + name))


def _run_child(source: Path, url: str, dataset: Path, reads: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(source)}
    command = [sys.executable, __file__, "--child", url, str(dataset), reads]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the child failed ({source}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mean(runs: list[dict], kind: str, field: str) -> float | None:
    values = [run["kinds"][kind][field] for run in runs if run["kinds"][kind][field] is not None]
    return sum(values) / len(values) if values else None


def _every_item(runs: list[dict], field: str) -> float | None:
    """The mean per request when every item is read once (kinds weighted by their numbers)."""
    counts = runs[0]["items"]
    total = sum(counts.values())
    parts = [_mean(runs, kind, field) for kind in counts]
    if any(part is None for part in parts):
        return None
    return sum(part * counts[kind] for part, kind in zip(parts, counts, strict=True)) / total


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(results: dict, sides: list[str]) -> list[str]:
    lines = [
        "| backend | read | items | "
        + " | ".join(f"{side} cpu µs | {side} db µs | {side} stmts" for side in sides)
        + (" | cpu ratio |" if len(sides) == 2 else " |"),
        "|---|---|---:|" + "---:|---:|---:|" * len(sides) + ("---:|" if len(sides) == 2 else ""),
    ]
    for backend, by_side in results.items():
        counts = by_side[sides[0]][0]["items"]
        measured = by_side[sides[0]][0]["kinds"]
        rows = []
        if KINDS[0] in measured:
            rows = [(kind, counts.get(kind)) for kind in KINDS] + [("every item", sum(counts.values()))]
        if "list page" in measured:
            rows.append(("list page (100)", None))
        rows += [(kind, None) for kind in WRITE_KINDS if kind in measured]
        for label, number in rows:
            cells, cpu = [], []
            for side in sides:
                runs = by_side[side]
                if label == "every item":
                    values = [_every_item(runs, f) for f in ("cpu_us", "db_us", "statements")]
                else:
                    kind = "list page" if label.startswith("list page") else label
                    values = [_mean(runs, kind, f) for f in ("cpu_us", "db_us", "statements")]
                cpu.append(values[0])
                cells += [_fmt(values[0]), _fmt(values[1]), _fmt(values[2], 2)]
            ratio = f" {cpu[1] / cpu[0]:.2g}x |" if len(sides) == 2 and cpu[0] else " |"
            shown = f"{number:,}" if number is not None else ""
            lines.append(
                f"| {backend} | {label} | {shown} | "
                + " | ".join(cells)
                + (" |" + ratio if len(sides) == 2 else " |")
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--compare", type=Path, help="also read with this source tree's sowctl")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--sows", type=int, default=DATASET["sows"], help="a smaller dataset, for a quick look"
    )
    parser.add_argument("--items", type=int, default=DATASET["items"])
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "sowctl-bench")
    parser.add_argument("--write", type=Path, help="append the table to this Markdown file")
    parser.add_argument(
        "--reads",
        default="get,list",
        help="get (every item), list (every page), write (the writes that count)",
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    dataset = _dataset_file(args.cache_dir, args.sows, args.items)
    sides = {"this": ROOT}
    if args.compare:
        sides = {"before": args.compare.resolve(), "after": ROOT}
    load = [os.getloadavg()[0]]
    results: dict[str, dict[str, list[dict]]] = {}
    for backend in args.backends.split(","):
        urls = {
            side: _database(
                backend, f"{_tree_key(src)}_{args.sows}x{args.items}", args.cache_dir, args.pg_url
            )
            for side, src in sides.items()
        }
        results[backend] = {side: [] for side in sides}
        order = list(sides)
        for round_ in range(args.rounds):
            for side in order if round_ % 2 == 0 else order[::-1]:
                results[backend][side].append(_run_child(sides[side], urls[side], dataset, args.reads))
                load.append(os.getloadavg()[0])
    lines = table(results, list(sides))
    sized = (
        ""
        if (args.sows, args.items) == (DATASET["sows"], DATASET["items"])
        else f" --sows {args.sows} --items {args.items}"
    )
    header = (
        f"`python bench/bench_item_reads.py --backends {args.backends} --rounds {args.rounds}{sized}"
        + ("" if args.reads == "get,list" else f" --reads {args.reads}")
        + (" --compare DIR`" if args.compare else "`")
        + f", {datetime.now().strftime('%Y-%m-%d %H:%M')}, {platform.machine()}, {os.cpu_count()} CPUs,"
        + f" load average {min(load):.1f} to {max(load):.1f} during the run"
    )
    print(header)
    print("\n".join(lines))
    if args.write:
        with args.write.open("a") as out:
            out.write("\n" + header + "\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
