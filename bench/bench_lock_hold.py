#!/usr/bin/env python3
"""How long one heavy, legal write holds its organization's write lock.

    python bench/bench_lock_hold.py                          # SQLite and PostgreSQL
    python bench/bench_lock_hold.py --backends sqlite --runs 5
    PYTHONPATH=/other/tree python bench/bench_lock_hold.py   # the sowctl package of another tree
    python bench/bench_lock_hold.py --compare /other/tree    # that tree, then this one: ratios

In process, through the service layer (what a request's handler calls), on a fresh database
per backend (a temporary SQLite file in WAL mode; a throwaway PostgreSQL database created
next to ``--pg-url`` and dropped after):

* ``reorder``: ``items.reorder_items`` of every item of a 10,000-item SOW (the largest body
  the API takes), alternately reversed and back, so that every row changes each time;
* ``dependency, item before chain``: ``dependencies.create_dependency`` of "the first item
  of a 10,000-item chain depends on item W", where W already has a rank above the whole chain
  (an untimed dependency between two new items placed it there). The edge disagrees with the
  stored order; W has to come before the entire chain;
* ``dependency, two chains joined``: the edge that joins two 5,000-item chains against the
  stored order. The chains X and Y are ranked X first; the first item of X depends on the end
  of Y, which puts all of Y before all of X. The next run removes that dependency (untimed)
  and makes the first item of Y depend on the end of X, which puts X first again. Both sides
  of the edge are 5,000 items, whichever side moves;
* ``cascade delete``: ``items.delete_item`` of the root of a 10,000-item subtree (a
  requirement, 99 requirements under it, 100 task items under each) holding a dependency
  chain through its task items (9,899 dependencies) and 100 dependencies from items outside it.

Measured per request: wall time; time inside ``db.write_transaction`` (the lock hold: on
SQLite the ``BEGIN IMMEDIATE`` transaction, on PostgreSQL the transaction that holds the
organization's advisory lock, commit included); this process's CPU (on SQLite the database
runs in it); on PostgreSQL the CPU of the server backend that ran the statements (from
``/proc``, so the server must run on this machine); and the statements sent to the database
(at the driver's cursor: each row of an ``executemany`` counts). Medians
of ``--runs``; ratios between trees belong in one sitting (the machine is shared).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from sowctl.foundation.clock import parse_timestamp
from sowctl.schemas.dependencies import DependencyCreate
from sowctl.schemas.items import ReorderRequest
from sowctl.services import dependencies, graph, items
from sowctl.services.access import Caller
from sowctl.storage import database as db_module
from sowctl.storage import models as m
from sowctl.storage import transactions
from sowctl.storage.database import open_database

ORG = "org-lockhold"
USER = "user-lockhold"
PROJECT = "project-lockhold"
CALLER = Caller(user_id=USER, organization_id=ORG, role="member")
MOMENT = parse_timestamp("2026-01-01T00:00:00Z")
CHUNK = 500
TICKS = os.sysconf("SC_CLK_TCK")


# --- measuring ---------------------------------------------------------------------------


class LockClock:
    """Seconds spent inside ``db.write_transaction`` since the last ``take()``.

    The services call ``write_transaction``, which enters ``transactions._serialised``:
    wrapping that one function times every write lock they take (the walks a dependency
    create makes before it on SQLite are not in it)."""

    def __init__(self) -> None:
        self.held = 0.0
        inner = transactions._serialised

        @contextlib.contextmanager
        def timed(database, lock_key):
            started = time.perf_counter()
            try:
                with inner(database, lock_key):
                    yield
            finally:
                self.held += time.perf_counter() - started

        transactions._serialised = timed

    def take(self) -> float:
        held, self.held = self.held, 0.0
        return held


def backend_cpu() -> float:
    """CPU seconds of this connection's PostgreSQL backend so far (0 on SQLite)."""
    database = m.database_proxy.obj
    if db_module.is_sqlite(database):
        return 0.0
    pid = database.execute_sql("SELECT pg_backend_pid()").fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


class _CountingCursor:
    """A driver cursor that counts the statements sent through it (each row of an
    ``executemany`` is one)."""

    def __init__(self, cursor: object, count: list[int]) -> None:
        self._cursor, self._count = cursor, count

    def execute(self, *args: object) -> object:
        self._count[0] += 1
        return self._cursor.execute(*args)

    def executemany(self, sql: str, rows: object) -> object:
        rows = list(rows)  # type: ignore[call-overload]
        self._count[0] += len(rows)
        return self._cursor.executemany(sql, rows)

    def __getattr__(self, name: str) -> object:
        return getattr(self._cursor, name)

    def __iter__(self) -> Iterator[object]:
        return iter(self._cursor)


@contextlib.contextmanager
def statements() -> Iterator[list[int]]:
    """``[n]``: the statements sowctl sends to the database inside the block.

    Counted at the driver's cursor, not with SQLite's trace callback: that one also
    reports every foreign-key action and expands each statement's text for it, which
    costs more than a cascade delete itself."""
    count = [0]
    database = m.database_proxy.obj
    plain = database.cursor
    database.cursor = lambda *args, **kwargs: _CountingCursor(plain(*args, **kwargs), count)
    try:
        yield count
    finally:
        del database.cursor


def measure(clock: LockClock, action: Callable[[], object]) -> dict[str, float]:
    clock.take()
    cpu, server = time.process_time(), backend_cpu()
    started = time.perf_counter()
    with statements() as count:
        action()
    wall = time.perf_counter() - started
    return {
        "wall": wall,
        "lock": clock.take(),
        "cpu": time.process_time() - cpu,
        "server": backend_cpu() - server,
        "statements": count[0],
    }


# --- the data ----------------------------------------------------------------------------


def _insert(model: type[m.BaseModel], rows: list[dict]) -> None:
    for start in range(0, len(rows), CHUNK):
        model.insert_many(rows[start : start + CHUNK]).execute()


def _item(item_id: str, sow: str, n: int, parent: str | None = None, kind: str = "task_item") -> dict:
    return {
        "id": item_id,
        "sow": sow,
        "parent": parent,
        "type": kind,
        "title": f"Item {item_id}",
        "order_index": n,
        "status": "pending",
        "created_by_user_id": USER,
        "created_at": MOMENT,
        "updated_at": MOMENT,
    }


def _depends(dep_id: str, sow: str, source: str, target: str) -> dict:
    """``source`` depends on ``target``: the ordering edge target -> source."""
    return {
        "id": dep_id,
        "sow": sow,
        "source_item": source,
        "target_item": target,
        "dependency_type": "depends_on",
        "risk_level": "medium",
        "status": "active",
        "is_external": False,
        "created_by_user_id": USER,
        "created_at": MOMENT,
        "before_item_id": target,
        "after_item_id": source,
    }


def _sow(sow_id: str) -> None:
    m.Sow.create(key=sow_id, id=sow_id, organization=ORG, project=PROJECT, title=sow_id, created_at=MOMENT)


def chain_ids(name: str, size: int) -> list[str]:
    return [f"{name}-{n:05d}" for n in range(size)]


def tree_ids(run: int) -> tuple[str, list[dict], list[str]]:
    """The root, the item rows and the task items (in chain order) of subtree ``run``."""
    root = f"t{run}-root"
    rows = [_item(root, "sow-tree", run, kind="requirement")]
    tasks = []
    for r in range(99):
        requirement = f"t{run}-r{r:02d}"
        rows.append(_item(requirement, "sow-tree", r, root, "requirement"))
        for t in range(100):
            task = f"t{run}-r{r:02d}-{t:03d}"
            rows.append(_item(task, "sow-tree", t, requirement))
            tasks.append(task)
    return root, rows, tasks


def load(size: int, runs: int) -> None:
    """The organization, its three SOWs, and ``runs`` subtrees to delete."""
    with m.database_proxy.atomic():
        m.Organization.create(id=ORG, name="Lock hold")
        m.User.create(id=USER, organization=ORG, name="Bench user")
        m.Project.create(id=PROJECT, organization=ORG, name="Bench", created_at=MOMENT, updated_at=MOMENT)
        for sow in ("sow-reorder", "sow-chain", "sow-line", "sow-tree"):
            _sow(sow)
        _insert(m.Item, [_item(f"r-{n:05d}", "sow-reorder", n) for n in range(size)])
        half = size // 2
        xs, ys = chain_ids("x", half), chain_ids("y", half)
        _insert(m.Item, [_item(i, "sow-chain", n) for n, i in enumerate([*xs, *ys, "z-0", "z-1"])])
        deps = [_depends(f"dx-{n}", "sow-chain", b, a) for n, (a, b) in enumerate(itertools.pairwise(xs))]
        deps += [_depends(f"dy-{n}", "sow-chain", b, a) for n, (a, b) in enumerate(itertools.pairwise(ys))]
        _insert(m.Dependency, deps)
        line = chain_ids("c", size)
        ends = [f"{end}-{run}" for run in range(runs) for end in ("w", "u")]
        _insert(m.Item, [_item(i, "sow-line", n) for n, i in enumerate([*line, *ends])])
        _insert(
            m.Dependency,
            [_depends(f"dc-{n}", "sow-line", b, a) for n, (a, b) in enumerate(itertools.pairwise(line))],
        )
        outside = [_item(f"out-{n:03d}", "sow-tree", n) for n in range(100)]
        _insert(m.Item, outside)
        for run in range(runs):
            _, rows, tasks = tree_ids(run)
            _insert(m.Item, rows)
            deps = [
                _depends(f"dt{run}-{n}", "sow-tree", b, a)
                for n, (a, b) in enumerate(itertools.pairwise(tasks))
            ]
            deps += [
                _depends(f"do{run}-{n}", "sow-tree", o["id"], tasks[n * 97]) for n, o in enumerate(outside)
            ]
            _insert(m.Dependency, deps)
        graph.mark_ranks_stale([ORG])  # as the importer leaves them
    # Ranks: the first edge recomputes them (Kahn, smallest id first: all of X, then Y).
    depend("z-1", "z-0")


def depend(source: str, target: str) -> str:
    body = {
        "sourceItemId": source,
        "targetItemId": target,
        "dependencyType": "depends_on",
        "riskLevel": "low",
    }
    return dependencies.create_dependency(CALLER, DependencyCreate.model_validate(body)).id


# --- the runs ----------------------------------------------------------------------------


def run_backend(url: str, size: int, runs: int) -> dict[str, list[dict[str, float]]]:
    database = open_database(url)
    try:
        started = time.perf_counter()
        load(size, runs)
        print(f"  loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        clock = LockClock()
        found: dict[str, list[dict[str, float]]] = {key: [] for key in LABELS}
        ids = [f"r-{n:05d}" for n in range(size)]
        half = size // 2
        xs, ys = chain_ids("x", half), chain_ids("y", half)
        joined: str | None = None
        for run in range(runs):
            order = ids if run % 2 else ids[::-1]
            body = ReorderRequest.model_validate(
                {"items": [{"id": i, "orderIndex": n} for n, i in enumerate(order)]}
            )
            found["reorder"].append(
                measure(clock, lambda body=body: items.reorder_items(CALLER, "sow-reorder", body))
            )
            if joined is not None:
                dependencies.delete_dependency(CALLER, joined)
            source, target = (xs[0], ys[-1]) if run % 2 == 0 else (ys[0], xs[-1])
            made: list[str] = []
            found["against"].append(
                measure(clock, lambda s=source, t=target, made=made: made.append(depend(s, t)))
            )
            joined = made[0]
            depend(f"u-{run}", f"w-{run}")  # both new: placed after every ranked item
            first = chain_ids("c", size)[0]
            found["ahead"].append(measure(clock, lambda w=f"w-{run}", first=first: depend(first, w)))
            root = tree_ids(run)[0]
            found["delete"].append(measure(clock, lambda root=root: items.delete_item(CALLER, root)))
        check(xs, ys, runs)
        return found
    finally:
        database.close()


def check(xs: list[str], ys: list[str], runs: int) -> None:
    """The last create put the right chain first, and the subtrees are gone."""
    ranks = dict(m.Item.select(m.Item.id, m.Item.topo_rank).where(m.Item.sow == "sow-chain").tuples())
    first, second = (ys, xs) if runs % 2 else (xs, ys)
    chain = [ranks[i] for i in [*first, *second]]
    assert chain == sorted(chain) and len(set(chain)) == len(chain), "ranks out of order"
    assert not m.Item.select().where(m.Item.id.startswith("t")).exists(), "a subtree survived"


@contextlib.contextmanager
def database_for(backend: str, pg_url: str) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield str(Path(tmp) / "lockhold.db")
        return
    import psycopg2

    name = f"sowctl_lockhold_{uuid.uuid4().hex[:8]}"
    parts = urlsplit(pg_url)
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
        yield urlunsplit(parts._replace(path="/" + name))
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


LABELS = {
    "reorder": "reorder, 10,000 items",
    "ahead": "dependency, item before chain",
    "against": "dependency, two chains joined",
    "delete": "cascade delete, 10,000 items",
}


FIELDS = ("wall", "lock", "cpu", "server", "statements")


def medians(found: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        key: {f: statistics.median(row[f] for row in rows) for f in FIELDS} for key, rows in found.items()
    }


def report(backend: str, found: dict[str, dict[str, float]], runs: int) -> None:
    print(f"{backend}: medians of {runs} (seconds)")
    print(f"  {'request':<32} {'wall':>7} {'lock':>7} {'CPU':>7} {'DB CPU':>7} {'statements':>10}")
    for key, label in LABELS.items():
        row = found[key]
        print(
            f"  {label:<32} {row['wall']:7.3f} {row['lock']:7.3f} {row['cpu']:7.3f} "
            f"{row['server']:7.3f} {int(row['statements']):>10}"
        )


def compare(backend: str, before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> None:
    print(f"{backend}: before -> after (ratio), medians, milliseconds")
    print(f"  {'request':<32} {'lock':>24} {'CPU + DB CPU':>24} {'statements':>16}")
    for key, label in LABELS.items():
        old, new = before[key], after[key]
        cells = []
        for was, now in (
            (old["lock"], new["lock"]),
            (old["cpu"] + old["server"], new["cpu"] + new["server"]),
        ):
            cells.append(f"{was * 1000:7.0f} -> {now * 1000:5.0f} ({was / max(now, 1e-4):5.1f}x)")
        statements = f"{int(old['statements'])} -> {int(new['statements'])}"
        print(f"  {label:<32} {cells[0]:>24} {cells[1]:>24} {statements:>16}")


def _child(args: argparse.Namespace, backend: str, tree: Path) -> dict[str, dict[str, float]]:
    """This script run on ``tree``'s sowctl package for one backend: its medians."""
    command = [sys.executable, __file__, "--backends", backend, "--pg-url", args.pg_url, "--json"]
    command += ["--items", str(args.items), "--runs", str(args.runs)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--items", type=int, default=10_000, help="items reordered, and in the two chains")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="a tree whose sowctl runs first, backend by backend")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    here = Path(items.__file__).resolve().parents[2]
    for backend in args.backends.split(","):
        if args.compare is not None:
            print(f"{backend}: {args.compare} (before), then {here} (after)", flush=True)
            compare(backend, _child(args, backend, args.compare), _child(args, backend, here))
            continue
        with database_for(backend, args.pg_url) as url:
            found = medians(run_backend(url, args.items, args.runs))
        if args.json:
            print(json.dumps(found))
        else:
            print(f"sowctl from {here}")
            report(backend, found, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
