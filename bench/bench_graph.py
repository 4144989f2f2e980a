#!/usr/bin/env python3
"""Benchmark the dependency graph: the cycle check on create, and the chain report.

    python bench/bench_graph.py                      # 10,000 items, 50,000 dependencies
    python bench/bench_graph.py --items 2000 --deps 10000 --samples 50

Builds one chain-heavy SOW (``gen_dataset.chain_heavy_sow``: dense, mostly
local, mostly ordered dependencies, so chains run thousands of items deep) in a
fresh SQLite file with ``insert_many`` (filling ``before_item_id``/``after_item_id``
through ``graph.ordering_edge`` and marking the organization's ranks stale, as the
importer does), then times, in process through the service layer:

* ``first create (ranks)``: the first create after the load, which recomputes the
  organization's topological ranks (``graph.recompute_ranks``) before its check;
* ``create, new item``: a new task item's dependency on a random existing item
  (the everyday case: new work waits for old work);
* ``create, new prerequisite``: a random existing item's dependency on a new item
  (old work now waits for something new);
* ``create, like the data``: a dependency between existing items drawn like the
  generator draws them (90% within 8 items of each other), always consistent with
  the work order, so it is accepted (with a walk only where the stored ranks
  disagree with the work order);
* ``create, against the order``: a dependency between nearby existing items (at
  most 8 apart) that is accepted but disagrees with the stored ranks, so that the
  check walks between the two ranks and reorders them (Pearce-Kelly);
* ``create, refused``: a dependency that would close a cycle, refused with the
  cycle path named;
* ``chain (flat, JSON)``: the ``chain.get`` operation's body (``chain_report(sow, "flat")``
  and the body made of it, ``operations.chain``) serialised with ``json.dumps``.

Each create runs in its own write transaction, as a request would. ``walks``
counts the creates that needed the bounded walk (``graph._reorder``) rather than
the O(1) rank comparison.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_dataset import ORG_ID, PROJECT_ID, USER_ID, chain_heavy_sow

from sowctl.foundation.clock import parse_timestamp
from sowctl.foundation.errors import CycleDetected
from sowctl.operations import call_local
from sowctl.schemas.dependencies import DependencyCreate
from sowctl.schemas.items import ItemCreate
from sowctl.services import dependencies as deps
from sowctl.services import graph, items
from sowctl.services.access import Caller
from sowctl.storage import models as m
from sowctl.storage.database import open_database

CHUNK = 500  # rows per INSERT: well under SQLite's bound-parameter limit


def _chunks(rows: Sequence[dict], size: int = CHUNK) -> Iterable[Sequence[dict]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def load(data: dict) -> str:
    """Insert the generated SOW directly (no importer needed); return the SOW id."""
    moment = parse_timestamp("2026-01-01T00:00:00Z")
    sow_id = data["sows"][0]["id"]
    with m.database_proxy.atomic():
        m.Organization.create(id=ORG_ID, name="Bench Org")
        m.User.create(id=USER_ID, organization=ORG_ID, name="Bench User")
        m.Project.create(
            id=PROJECT_ID, organization=ORG_ID, name="Bench", created_at=moment, updated_at=moment
        )
        m.Sow.create(
            key=sow_id,
            id=sow_id,
            organization=ORG_ID,
            project=PROJECT_ID,
            title="Bench SOW",
            created_at=moment,
        )
        item_rows = [
            {
                "id": item["id"],
                "sow": item["sowId"],
                "parent": item["parentItemId"],
                "type": item["type"],
                "title": item["title"],
                "description": item["description"],
                "order_index": item["orderIndex"],
                "status": item["status"],
                "created_by_user_id": USER_ID,
                "created_at": parse_timestamp(item["createdAt"]),
                "updated_at": parse_timestamp(item["createdAt"]),
            }
            for item in data["items"]
        ]
        for chunk in _chunks(item_rows):
            m.Item.insert_many(chunk).execute()
        dep_rows = []
        for dep in data["dependencies"]:
            edge = graph.ordering_edge(
                dep["dependencyType"],
                dep["sourceItemId"],
                dep["targetItemId"],
                dep["status"],
                dep["isExternal"],
            )
            dep_rows.append(
                {
                    "id": dep["id"],
                    "sow": sow_id,
                    "source_item": dep["sourceItemId"],
                    "target_item": dep["targetItemId"],
                    "dependency_type": dep["dependencyType"],
                    "risk_level": dep["riskLevel"],
                    "status": dep["status"],
                    "is_external": dep["isExternal"],
                    "external_target": dep.get("externalTarget"),
                    "sla_date": datetime.date.fromisoformat(dep["slaDate"]) if dep.get("slaDate") else None,
                    "created_by_user_id": USER_ID,
                    "created_at": parse_timestamp(dep["createdAt"]),
                    "before_item_id": edge[0] if edge else None,
                    "after_item_id": edge[1] if edge else None,
                }
            )
        for chunk in _chunks(dep_rows):
            m.Dependency.insert_many(chunk).execute()
        graph.mark_ranks_stale([ORG_ID])  # the edges carry no ranks, as after an import
    return sow_id


def timed(action: Callable[[], object], cpu: list[float] | None = None) -> float:
    """Wall-clock seconds of ``action``; its CPU seconds go to ``cpu`` when given.

    CPU time is reported too because a shared machine's load inflates wall time
    while leaving the work done (SQLite runs in process, so it is counted) alone.
    """
    started, started_cpu = time.perf_counter(), time.process_time()
    action()
    if cpu is not None:
        cpu.append(time.process_time() - started_cpu)
    return time.perf_counter() - started


def count_walks() -> list[int]:
    """A one-item list counting the calls of ``graph._reorder`` from now on."""
    count = [0]
    walk = graph._reorder

    def counted(*args: object) -> object:
        count[0] += 1
        return walk(*args)

    graph._reorder = counted
    return count


def summary(name: str, seconds: list[float], cpu: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{name:<26} median {statistics.median(seconds) * 1000:8.2f} ms  "
        f"p95 {p95 * 1000:8.2f} ms  max {ordered[-1] * 1000:8.2f} ms  "
        f"(CPU median {statistics.median(cpu) * 1000:8.2f} ms, n={len(seconds)})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--deps", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=200, help="creates timed per scenario")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", help="SQLite file to build (default: a temporary file)")
    args = parser.parse_args(argv)

    workdir = tempfile.TemporaryDirectory()
    db_path = args.db or str(Path(workdir.name) / "bench.db")
    open_database(db_path)
    started = time.perf_counter()
    data = chain_heavy_sow(args.items, args.deps, seed=args.seed)
    sow_id = load(data)
    print(
        f"loaded {len(data['items'])} items, {len(data['dependencies'])} dependencies "
        f"in {time.perf_counter() - started:.1f}s ({db_path})"
    )
    caller = Caller(user_id=USER_ID, organization_id=ORG_ID, role="member")
    ids = [item["id"] for item in data["items"]]  # in work order: earlier items come first
    rng = random.Random(args.seed)

    def create(source: str, target: str, dep_type: str = "depends_on") -> None:
        body = {
            "sourceItemId": source,
            "targetItemId": target,
            "dependencyType": dep_type,
            "riskLevel": "medium",
        }
        deps.create_dependency(caller, DependencyCreate.model_validate(body))

    cpu: dict[str, list[float]] = {"new": [], "like": [], "refused": [], "chain": [], "first": []}
    walked = count_walks()
    walks: dict[str, int] = {}
    first_item = items.create_item(caller, sow_id, ItemCreate(title="First new task", type="task_item"))
    first = timed(lambda: create(first_item.id, ids[rng.randrange(len(ids))]), cpu["first"])
    assert not graph.ranks_stale(ORG_ID)

    new_item: list[float] = []
    walks["new"] = -walked[0]
    for number in range(args.samples):
        item = items.create_item(caller, sow_id, ItemCreate(title=f"New task {number}", type="task_item"))
        target = ids[rng.randrange(len(ids))]
        new_item.append(timed(lambda item=item, target=target: create(item.id, target), cpu["new"]))
    walks["new"] += walked[0]

    new_prerequisite: list[float] = []
    walks["pre"] = -walked[0]
    for number in range(args.samples):
        item = items.create_item(
            caller, sow_id, ItemCreate(title=f"New prerequisite {number}", type="task_item")
        )
        source = ids[rng.randrange(len(ids))]
        new_prerequisite.append(
            timed(lambda item=item, source=source: create(source, item.id), cpu.setdefault("pre", []))
        )
    walks["pre"] += walked[0]

    like_data: list[float] = []
    walks["like"] = -walked[0]
    for _ in range(args.samples):
        later = rng.randrange(1, len(ids))
        earlier = max(0, later - rng.randint(1, 8)) if rng.random() < 0.9 else rng.randrange(later)
        like_data.append(timed(lambda s=ids[later], t=ids[earlier]: create(s, t), cpu["like"]))
    walks["like"] += walked[0]

    against: list[float] = []
    walks["against"] = -walked[0]
    for _ in range(50 * args.samples):
        if len(against) == args.samples:
            break
        # item i-k depends on item i, where i-k does not come before i in the graph
        # (found by a full walk, untimed): accepted, against the stored order.
        later = rng.randrange(1, len(ids))
        earlier = max(0, later - rng.randint(1, 8))
        if graph.reaches(ids[earlier], ids[later]):
            continue
        against.append(
            timed(lambda s=ids[earlier], t=ids[later]: create(s, t), cpu.setdefault("against", []))
        )
    walks["against"] += walked[0]

    refused: list[float] = []
    lengths: list[int] = []
    for _ in range(max(1, args.samples // 4)):
        # item i+1 depends on item i (possibly indirectly) for a local pair, so the
        # reverse dependency closes a cycle.
        later = rng.randrange(1, len(ids))
        earlier = later - 1
        if not graph.reaches(ids[earlier], ids[later]):
            continue

        def refuse(s: str = ids[earlier], t: str = ids[later]) -> None:
            try:
                create(s, t)
            except CycleDetected as exc:
                lengths.append(len(exc.path))
            else:
                raise AssertionError("expected a cycle")

        refused.append(timed(refuse, cpu["refused"]))

    reports: list[float] = []
    size = 0
    for _ in range(5):

        def report() -> None:
            nonlocal size
            size = len(json.dumps(call_local("chain.get", caller, query={"sowId": sow_id, "format": "flat"})))

        reports.append(timed(report, cpu["chain"]))

    print(summary("first create (ranks)", [first], cpu["first"]))
    print(summary("create, new item", new_item, cpu["new"]) + f"  walks {walks['new']}")
    print(summary("create, new prerequisite", new_prerequisite, cpu["pre"]) + f"  walks {walks['pre']}")
    print(summary("create, like the data", like_data, cpu["like"]) + f"  walks {walks['like']}")
    if against:
        print(summary("create, against the order", against, cpu["against"]) + f"  walks {walks['against']}")
    if refused:
        print(
            summary("create, refused (cycle)", refused, cpu["refused"])
            + f"  cycle length median {statistics.median(lengths)}"
        )
    print(summary("chain (flat, JSON)", reports, cpu["chain"]) + f"  {size / 1e6:.1f} MB")
    workdir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
