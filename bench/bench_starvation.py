#!/usr/bin/env python3
"""What one organization's heaviest legal requests do to another organization's ordinary ones.

    python bench/bench_starvation.py                           # SQLite and PostgreSQL
    python bench/bench_starvation.py --backends sqlite --samples 300
    python bench/bench_starvation.py --source DIR              # serve the sowctl package of another tree

A real ``sowctl serve`` subprocess (default options: 1 worker, 4 threads; ``--quiet`` only
turns the access log off) on a fresh database per backend (a SQLite file; a throwaway
PostgreSQL database next to ``--pg-url``, dropped after), so that it measures whatever HTTP
engine the served tree has. Organization A's credentials (one member token, and for the
purchase-order endpoint its API key) loop, with ``--clients`` clients per kind:

* ``reorder``: ``PUT /api/sow/{id}/items/reorder`` of all 10,000 items of a SOW, reversed and
  back, so that every row changes each time;
* ``depend``: ``POST /api/dependencies`` joining two 5,000-item chains against the stored
  order (the first item of one depends on the last of the other), then ``DELETE`` of it, then
  the other way round: every create re-ranks the 10,000-item chain (two 5,000-item walks;
  before the gaps every rank of both chains was rewritten, now the 5,000 of one side);
* ``chain``: ``GET /api/dependencies/chain?sowId=...`` of a SOW with 50,000 dependencies
  (``gen_dataset.chain_heavy_sow(10000, 50000)``), read to the end;
* ``po``: ``POST /api/external/create-purchase-order`` with 250,000 line items (``{}`` each,
  so that the body stays under the 1 MiB limit), refused as invalid.

Meanwhile organization B (its own token) sends ``--samples`` ordinary requests one after
another: a GET of one item, a list page of 20 of its 1,000-item SOW, a create of an item, in
turn. First alone (idle), then under A's load. Printed per backend: B's p50 and p99 idle and
loaded and their ratio (target: loaded p99 under 3x idle p99), for all of B's requests, its
reads (which wait for no lock: what they lose is the processor) and its writes (which on
SQLite also wait for the database's write lock); B's statuses, and what A got through.
Ratios belong within one run: the machine is shared, and this process's clients use its
processors too.
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
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_graph import load as load_chain_heavy
from gen_dataset import ORG_ID, PROJECT_ID, USER_ID, chain_heavy_sow

from sowctl.foundation.clock import parse_timestamp
from sowctl.schemas.dependencies import DependencyCreate
from sowctl.services import credentials, dependencies
from sowctl.services.access import Caller
from sowctl.storage import models as m
from sowctl.storage.database import open_database

A, B = ORG_ID, "org-quiet"
B_USER, B_PROJECT, B_SOW = "user-quiet", "project-quiet", "sow-quiet"
COMPANY = "company-heavy"
MOMENT = parse_timestamp("2026-01-01T00:00:00Z")
ROWS = 500
SIZE = 10_000


# --- the data ---------------------------------------------------------------------------


def _insert(model: type[m.BaseModel], rows: list[dict]) -> None:
    for start in range(0, len(rows), ROWS):
        model.insert_many(rows[start : start + ROWS]).execute()


def _item(item_id: str, sow: str, n: int, user: str = USER_ID) -> dict:
    return {
        "id": item_id,
        "sow": sow,
        "type": "task_item",
        "title": f"Item {n}",
        "order_index": n,
        "status": "pending",
        "created_by_user_id": user,
        "created_at": MOMENT,
        "updated_at": MOMENT,
    }


def _sow(key: str, organization: str, project: str) -> None:
    m.Sow.create(key=key, id=key, organization=organization, project=project, title=key, created_at=MOMENT)


def chain_ids(name: str, client: int) -> list[str]:
    return [f"{name}{client}-{n:05d}" for n in range(SIZE // 2)]


def seed(url: str, clients: int) -> dict[str, str]:
    """Both organizations' data and credentials; returns what the clients need."""
    database = open_database(url)
    try:
        report_sow = load_chain_heavy(chain_heavy_sow(SIZE, 50_000))  # organization A, stale ranks
        with m.database_proxy.atomic():
            for client in range(clients):
                _sow(f"sow-reorder-{client}", A, PROJECT_ID)
                ids = [f"r{client}-{n:05d}" for n in range(SIZE)]
                _insert(m.Item, [_item(i, f"sow-reorder-{client}", n) for n, i in enumerate(ids)])
                _sow(f"sow-chains-{client}", A, PROJECT_ID)
                xs, ys = chain_ids("x", client), chain_ids("y", client)
                _insert(m.Item, [_item(i, f"sow-chains-{client}", n) for n, i in enumerate([*xs, *ys])])
                edges = [*itertools.pairwise(xs), *itertools.pairwise(ys)]
                _insert(m.Dependency, [_depends(f"sow-chains-{client}", b, a) for a, b in edges])
            m.Company.create(id=COMPANY, organization=A, name="Heavy Co")
            m.Organization.create(id=B, name="Quiet")
            m.User.create(id=B_USER, organization=B, name="Quiet user")
            m.Project.create(id=B_PROJECT, organization=B, name="Quiet", created_at=MOMENT, updated_at=MOMENT)
            _sow(B_SOW, B, B_PROJECT)
            _insert(m.Item, [_item(f"q-{n:04d}", B_SOW, n, B_USER) for n in range(1_000)])
        # The first ordering edge ranks organization A (after the load its ranks are stale):
        # two new items, then X, then Y, the ranks of the report's SOW among them.
        _insert(m.Item, [_item(f"first-{n}", "sow-chains-0", n) for n in range(2)])
        caller = Caller(user_id=USER_ID, organization_id=A, role="member")
        body = {"sourceItemId": "first-1", "targetItemId": "first-0", "dependencyType": "depends_on"}
        dependencies.create_dependency(caller, DependencyCreate.model_validate({**body, "riskLevel": "low"}))
        return {
            "a_token": credentials.create_token(USER_ID, A, "member").secret,
            "a_key": credentials.create_key(A).secret,
            "b_token": credentials.create_token(B_USER, B, "member").secret,
            "report_sow": report_sow,
        }
    finally:
        database.close()


def _depends(sow: str, source: str, target: str) -> dict:
    """``source`` depends on ``target``."""
    return {
        "id": f"d-{source}",
        "sow": sow,
        "source_item": source,
        "target_item": target,
        "dependency_type": "depends_on",
        "risk_level": "medium",
        "status": "active",
        "is_external": False,
        "created_by_user_id": USER_ID,
        "created_at": MOMENT,
        "before_item_id": target,
        "after_item_id": source,
    }


# --- the server -------------------------------------------------------------------------


@contextlib.contextmanager
def served(url: str, source: Path | None) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    command = [sys.executable, "-m", "sowctl", "--db", url, "serve", "--port", "0", "--quiet"]
    # Started elsewhere than this tree: ``python -m`` puts the working directory first on
    # the path, ahead of PYTHONPATH, and would serve this tree's package whatever --source says.
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, text=True, env=env, cwd=tempfile.gettempdir(), **pipes)
    assert process.stdout is not None
    address = None
    for line in process.stdout:
        if line.startswith("Listening on "):
            address = line.split()[-1]
            break
    if address is None:
        raise SystemExit("the server did not start")
    drain = threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True)  # type: ignore[union-attr]
    drain.start()
    try:
        yield address
    finally:
        process.terminate()
        process.wait(timeout=60)


@contextlib.contextmanager
def database_for(backend: str, pg_url: str, workdir: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(workdir / "starvation.db")
        return
    import psycopg2

    name = f"sowctl_starvation_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
        yield urlunsplit(urlsplit(pg_url)._replace(path="/" + name))
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


# --- organization A's loops -------------------------------------------------------------


Loop = Callable[[httpx.Client, int], list[int]]  # one turn of a client: the statuses it got


def reorder_loop(client: int) -> Loop:
    ids = [f"r{client}-{n:05d}" for n in range(SIZE)]
    bodies = [
        json.dumps({"items": [{"id": i, "orderIndex": n} for n, i in enumerate(order)]})
        for order in (ids[::-1], ids)
    ]

    def once(http: httpx.Client, turn: int) -> list[int]:
        path = f"/api/sow/sow-reorder-{client}/items/reorder"
        reply = http.put(path, content=bodies[turn % 2], headers={"content-type": "application/json"})
        return [reply.status_code]

    return once


def depend_loop(client: int) -> Loop:
    xs, ys = chain_ids("x", client), chain_ids("y", client)

    def once(http: httpx.Client, turn: int) -> list[int]:
        # X is ranked first: the first item of X waits for the end of Y (all of Y moves
        # before X); removed, then the first of Y waits for the end of X, and so on.
        source, target = (xs[0], ys[-1]) if turn % 2 == 0 else (ys[0], xs[-1])
        body = {"sourceItemId": source, "targetItemId": target, "dependencyType": "depends_on"}
        made = http.post("/api/dependencies", json={**body, "riskLevel": "low"})
        statuses = [made.status_code]
        if made.status_code == 201:
            statuses.append(http.delete(f"/api/dependencies/{made.json()['id']}").status_code)
        return statuses

    return once


def chain_loop(report_sow: str) -> Loop:
    def once(http: httpx.Client, turn: int) -> list[int]:
        with http.stream("GET", "/api/dependencies/chain", params={"sowId": report_sow}) as reply:
            for _ in reply.iter_bytes():
                pass
        return [reply.status_code]

    return once


PO_BODY = json.dumps(
    {
        "project_id": "1",
        "commitment_id": "1",
        "title": "Many lines",
        "vendor_id": 1,
        "status": "draft",
        "line_items": [{}] * 250_000,
    },
    separators=(",", ":"),
)


def po_loop(key: str) -> Loop:
    headers = {
        "x-api-key": key,
        "organization-id": A,
        "company-id": COMPANY,
        "content-type": "application/json",
    }

    def once(http: httpx.Client, turn: int) -> list[int]:
        return [
            http.post("/api/external/create-purchase-order", content=PO_BODY, headers=headers).status_code
        ]

    return once


class Load:
    """Organization A's clients, each looping one kind of request until stopped."""

    def __init__(self, address: str, seeded: dict[str, str], clients: int, kinds: list[str]) -> None:
        self.stop = threading.Event()
        self.done: dict[str, Counter] = {}
        loops: list[tuple[str, Loop]] = []
        for client in range(clients):
            made = {
                "reorder": reorder_loop(client),
                "depend": depend_loop(client),
                "chain": chain_loop(seeded["report_sow"]),
                "po": po_loop(seeded["a_key"]),
            }
            loops += [(kind, made[kind]) for kind in kinds]
        self.threads = [
            threading.Thread(target=self._run, args=(address, seeded["a_token"], kind, once), daemon=True)
            for kind, once in loops
        ]

    def _run(
        self, address: str, token: str, kind: str, once: Callable[[httpx.Client, int], list[int]]
    ) -> None:
        counts = self.done.setdefault(kind, Counter())
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=address, headers=headers, timeout=300) as http:
            for turn in itertools.count():
                if self.stop.is_set():
                    return
                try:
                    counts.update(once(http, turn))
                except httpx.HTTPError as exc:
                    counts[type(exc).__name__] += 1

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=300)


# --- organization B's requests ----------------------------------------------------------


def quiet_requests(address: str, token: str, samples: int) -> tuple[dict[str, list[float]], Counter]:
    """Seconds of each of B's requests (all, reads, writes), sent one after another, and
    their statuses."""
    times: dict[str, list[float]] = {"all": [], "reads": [], "writes": []}
    statuses: Counter = Counter()
    with httpx.Client(base_url=address, headers={"Authorization": f"Bearer {token}"}, timeout=300) as http:
        for n in range(samples):
            started = time.perf_counter()
            if n % 3 == 0:
                reply = http.get(f"/api/items/q-{n % 1_000:04d}")
            elif n % 3 == 1:
                reply = http.get(f"/api/sow/{B_SOW}/items", params={"page": 1 + n % 50, "limit": 20})
            else:
                body = {"title": f"quiet {n}", "type": "task_item"}
                reply = http.post(f"/api/sow/{B_SOW}/items", json=body)
            seconds = time.perf_counter() - started
            times["all"].append(seconds)
            times["writes" if n % 3 == 2 else "reads"].append(seconds)
            statuses[reply.status_code] += 1
    return times, statuses


def quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000


def run(backend: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, database_for(backend, args.pg_url, Path(tmp)) as url:
        started = time.perf_counter()
        seeded = seed(url, args.clients)
        print(f"{backend}: seeded in {time.perf_counter() - started:.1f} s", flush=True)
        with served(url, args.source) as address:
            quiet_requests(address, seeded["b_token"], 30)  # warm-up
            idle, idle_statuses = quiet_requests(address, seeded["b_token"], args.samples)
            with Load(address, seeded, args.clients, args.kinds.split(",")) as load:
                time.sleep(args.warmup)
                loaded, loaded_statuses = quiet_requests(address, seeded["b_token"], args.samples)
    print(f"{backend}: B's statuses alone {dict(idle_statuses)}, under A's load {dict(loaded_statuses)}")
    for part in ("all", "reads", "writes"):
        p50 = quantile(idle[part], 50), quantile(loaded[part], 50)
        p99 = quantile(idle[part], 99), quantile(loaded[part], 99)
        print(
            f"{backend}: B {part:<6} p50 {p50[0]:7.1f} -> {p50[1]:7.1f} ms ({p50[1] / p50[0]:6.1f}x)  "
            f"p99 {p99[0]:7.1f} -> {p99[1]:7.1f} ms ({p99[1] / p99[0]:6.1f}x)"
        )
    for kind, counts in sorted(load.done.items()):
        print(f"{backend}: A {kind:<8} {sum(counts.values()):4d} answers {dict(counts)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--source", type=Path, help="serve the sowctl package of this source tree")
    parser.add_argument("--clients", type=int, default=1, help="organization A's clients per kind")
    parser.add_argument("--kinds", default="reorder,depend,chain,po", help="what organization A sends")
    parser.add_argument("--samples", type=int, default=300, help="B's requests per phase")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of A's load before B starts")
    args = parser.parse_args(argv)
    print(f"served: {args.source or 'this tree'}; A's load: {args.kinds}, {args.clients} client(s) each")
    for backend in args.backends.split(","):
        run(backend, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
