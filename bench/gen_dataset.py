#!/usr/bin/env python3
"""Generate large, valid datasets (the import format) for benchmarks and load tests.

    python bench/gen_dataset.py --sows 20 --items 100000 --deps 100000 -o big.json
    python bench/gen_dataset.py --chain-heavy --items 10000 --deps 50000 -o chain.json

Importable too: `big_dataset(...)` and `chain_heavy_sow(...)` return the dict.

Validity is by construction, so no graph search is needed (that is what keeps
100,000 items plus 100,000 dependencies at a few seconds):

* Items are created parents-first, so the creation order is a valid insertion
  order, and requirements only get requirement or task-item children while task
  items only get task-item children (the hierarchy rules).
* Creation order also serves as the "work order" for dependencies. Every ordered
  edge points from an earlier to a later item in the contract's before/after
  sense: depends_on/prerequisite/successor use the later item as source and the
  earlier one as target (target comes first); blocks uses the earlier item as
  source (source comes first). Since every edge agrees with one fixed total
  order, no cycle is possible, whether an edge is cancelled or not.

The script is standalone (stdlib only, nothing from sowctl) so it runs without
installing the package.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
import time
from itertools import accumulate
from typing import Any

ORG_ID = "org-bench"
USER_ID = "user-bench"
# Fixed uuids (uuid5 of "bench/..." in the demo namespace), so runs are reproducible.
CLIENT_ID = "b2f1adc1-2561-5ae7-8546-45fab19a373f"
CONTACT_ID = "b9c07606-438c-5812-ad5c-e5e528d46bc9"
PROJECT_ID = "94900ef9-3a07-5eed-9cfb-e8f72f327681"

# Weighted choices as (values, cumulative weights) for random.Random.choices.
TASK_STATUSES = (("pending", "in_progress", "completed", "cancelled"), (40, 25, 30, 5))
DEP_STATUSES = (("active", "resolved", "blocked", "cancelled"), (60, 25, 8, 7))
RISK_LEVELS = (("low", "medium", "high", "critical"), (30, 40, 22, 8))
# "external" is a pseudo-type here: an external dependency with a depends_on type.
MIXED_TYPES = (
    ("depends_on", "prerequisite", "successor", "blocks", "related_to", "external"),
    (55, 10, 8, 12, 10, 5),
)
# Chain-heavy SOWs are almost all ordered edges, so chains get long and deep.
CHAIN_TYPES = (
    ("depends_on", "prerequisite", "successor", "blocks", "related_to", "external"),
    (70, 8, 7, 10, 3, 2),
)

EXTERNAL_TARGETS = (
    ("Steel mill allocation", "Keystone Steel Fabricators", "Ravi Patel"),
    ("Glass panel delivery", "Skyline Glazing Systems", "Tom Reyes"),
    ("Utility feeder upgrade", "Metro Power and Light", "Olga Ivanova"),
    ("Building permit review", "City Building Department", "Permit desk"),
    ("Elevator commissioning", "Vertical Lift Co", "Sam Ortiz"),
)


def _weights(spec: tuple[tuple[str, ...], tuple[int, ...]]) -> tuple[list[str], list[int]]:
    values, weights = spec
    return list(values), list(accumulate(weights))


def _base_records(today: datetime.date) -> dict[str, Any]:
    """The single org, user, client (with a contact) and project every SOW hangs off."""
    created = f"{(today - datetime.timedelta(days=90)).isoformat()}T08:00:00Z"
    return {
        "organizations": [{"id": ORG_ID, "name": "Bench Org"}],
        "users": [
            {"id": USER_ID, "organizationId": ORG_ID, "name": "Bench User", "email": "bench@bench.example"}
        ],
        "clients": [
            {
                "id": CLIENT_ID,
                "organizationId": ORG_ID,
                "name": "Bench Client",
                "description": "Synthetic client for benchmarks.",
                "website": "https://bench.example",
                "industry": "Construction",
                "isPinned": False,
                "pinnedAt": None,
                "createdAt": created,
                "updatedAt": created,
                "contacts": [
                    {
                        "id": CONTACT_ID,
                        "clientId": CLIENT_ID,
                        "name": "Bench Contact",
                        "email": "contact@bench.example",
                        "phone": "+1-555-0000",
                        "role": "Owner's Representative",
                        "isPrimary": True,
                        "createdAt": created,
                        "updatedAt": created,
                    }
                ],
            }
        ],
        "projects": [
            {
                "id": PROJECT_ID,
                "organizationId": ORG_ID,
                "name": "Bench Project",
                "description": "Synthetic project holding every benchmark SOW.",
                "status": "active",
                "clientId": CLIENT_ID,
                "contactId": CONTACT_ID,
                "startDate": created,
                "endDate": None,
                "ownerUserId": USER_ID,
                "isPinned": False,
                "pinnedAt": None,
                "createdAt": created,
                "updatedAt": created,
            }
        ],
    }


def _split(total: int, parts: list[int]) -> list[int]:
    """Split `total` proportionally to `parts` (integers, exact sum, deterministic)."""
    weight = sum(parts)
    if weight == 0:
        return [0] * len(parts)
    shares = [total * p // weight for p in parts]
    # Hand the rounding remainder to the first parts that can take some.
    remainder = total - sum(shares)
    for i, p in enumerate(parts):
        if remainder == 0:
            break
        if p > 0:
            shares[i] += 1
            remainder -= 1
    return shares


class _Builder:
    """Accumulates items and dependencies; ids are global counters."""

    def __init__(self, rng: random.Random, today: datetime.date, id_width: int) -> None:
        self.rng = rng
        self.items: list[dict[str, Any]] = []
        self.deps: list[dict[str, Any]] = []
        self.id_width = id_width
        # Precomputed strings: formatting dates per record is the slow part otherwise.
        self.timestamps = [
            f"{(today - datetime.timedelta(days=d)).isoformat()}T{9 + d % 8:02d}:{d % 60:02d}:00Z"
            for d in range(1, 61)
        ]
        self.dates = {off: (today + datetime.timedelta(days=off)).isoformat() for off in range(-60, 124)}
        self.task_statuses = _weights(TASK_STATUSES)
        self.dep_statuses = _weights(DEP_STATUSES)
        self.risks = _weights(RISK_LEVELS)

    # ---------------------------------------------------------------- items

    def add_sow_items(self, sow_id: str, n: int) -> list[str]:
        """Create n items of one SOW in a valid hierarchy; return their ids in order."""
        rng = self.rng
        if n == 0:
            return []
        # A few top-level requirements, each with one nested requirement once the SOW
        # is big enough; everything else is a task item (or a sub-task) under them.
        n_top = max(1, min(8, n // 50))
        n_nested = n_top if n >= 20 * n_top else 0
        n_tasks = n - n_top - n_nested

        start = len(self.items)
        ids: list[str] = []
        types: list[str] = []
        parents: list[int] = []  # local index of the parent, -1 for top level
        next_order: dict[int, int] = {}

        def add(kind: str, parent: int, title: str) -> int:
            local = len(ids)
            ids.append(f"item-{start + local + 1:0{self.id_width}d}")
            types.append(kind)
            parents.append(parent)
            order = next_order.get(parent, 0)
            next_order[parent] = order + 1
            self.items.append(
                {
                    "id": ids[-1],
                    "sowId": sow_id,
                    "title": title,
                    "description": f"Synthetic {kind} for benchmarks.",
                    "type": kind,
                    "parentItemId": ids[parent] if parent >= 0 else None,
                    "orderIndex": order,
                    "status": "pending",
                    "createdByUserId": USER_ID,
                    "createdAt": self.timestamps[local % len(self.timestamps)],
                }
            )
            return local

        sections = [add("requirement", -1, f"Requirement {k + 1}") for k in range(n_top)]
        sections += [add("requirement", sections[k], f"Requirement {k + 1}.1") for k in range(n_nested)]
        last_task: list[int] = [-1] * len(sections)
        statuses, cum = self.task_statuses
        for t in range(n_tasks):
            # Contiguous blocks of tasks per section, like a real work breakdown.
            sec = t * len(sections) // max(1, n_tasks)
            if last_task[sec] >= 0 and rng.random() < 0.3:
                local = add("task_item", last_task[sec], f"Sub-task {t + 1}")
            else:
                local = add("task_item", sections[sec], f"Task {t + 1}")
                last_task[sec] = local
            self.items[start + local]["status"] = rng.choices(statuses, cum_weights=cum)[0]

        self._aggregate_requirements(start, types, parents)
        return ids

    def _aggregate_requirements(self, start: int, types: list[str], parents: list[int]) -> None:
        """Store each requirement's calculated status.

        Children always come after parents, so one reverse pass pushes descendant
        task-item counts up the tree: [total, cancelled, completed, pending].
        """
        counts = [[0, 0, 0, 0] for _ in types]
        for local in range(len(types) - 1, -1, -1):
            item = self.items[start + local]
            c = counts[local]
            if types[local] == "requirement":
                if c[0] == 0:
                    pass  # no task items below: keeps its own stored status
                elif c[1] == c[0]:
                    item["status"] = "cancelled"
                elif c[2] == c[0] - c[1]:
                    item["status"] = "completed"
                elif c[3] == c[0] - c[1]:
                    item["status"] = "pending"
                else:
                    item["status"] = "in_progress"
            parent = parents[local]
            if parent < 0:
                continue
            pc = counts[parent]
            for k in range(4):
                pc[k] += c[k]
            if types[local] == "task_item":
                status = item["status"]
                pc[0] += 1
                pc[1] += status == "cancelled"
                pc[2] += status == "completed"
                pc[3] += status == "pending"

    # ---------------------------------------------------------------- dependencies

    def add_sow_deps(
        self,
        ids: list[str],
        count: int,
        types_spec: tuple[tuple[str, ...], tuple[int, ...]],
        window: int,
        local_share: float,
    ) -> None:
        """Add `count` acyclic dependencies among `ids` (given in work order).

        Pairs are mostly local (target within `window` positions of the source),
        which builds long chains; the rest span the whole SOW.
        """
        rng = self.rng
        n = len(ids)
        type_values, type_cum = _weights(types_spec)
        status_values, status_cum = self.dep_statuses
        risk_values, risk_cum = self.risks
        seen: set[int] = set()  # (source, target) pairs already used, encoded as int
        for _ in range(count):
            dep_type = rng.choices(type_values, cum_weights=type_cum)[0]
            pair: tuple[int, int] | None = None
            if dep_type != "external" and n >= 2:
                pair = self._pick_pair(n, dep_type, window, local_share, seen)
            if pair is None:
                # External by choice, or no fresh internal pair left (tiny SOWs).
                self._add_external(ids[rng.randrange(n)], status_values, status_cum, risk_values, risk_cum)
                continue
            source, target = pair
            sla = rng.randint(-60, 120) if rng.random() < 0.8 else None
            self.deps.append(
                {
                    "id": f"dep-{len(self.deps) + 1:0{self.id_width}d}",
                    "sourceItemId": ids[source],
                    "targetItemId": ids[target],
                    "dependencyType": dep_type,
                    "riskLevel": rng.choices(risk_values, cum_weights=risk_cum)[0],
                    "status": rng.choices(status_values, cum_weights=status_cum)[0],
                    "isExternal": False,
                    "slaDate": self.dates[sla] if sla is not None else None,
                    "createdByUserId": USER_ID,
                    "createdAt": self.timestamps[len(self.deps) % len(self.timestamps)],
                }
            )

    def _pick_pair(
        self, n: int, dep_type: str, window: int, local_share: float, seen: set[int]
    ) -> tuple[int, int] | None:
        """Pick (source, target) local indices whose order agrees with the work order."""
        rng = self.rng
        for _attempt in range(12):
            later = rng.randrange(1, n)
            if rng.random() < local_share:
                earlier = max(0, later - rng.randint(1, window))
            else:
                earlier = rng.randrange(later)
            if dep_type == "blocks":
                source, target = earlier, later  # source comes first
            elif dep_type == "related_to":
                # No ordering: either direction is fine.
                source, target = (earlier, later) if rng.random() < 0.5 else (later, earlier)
            else:
                source, target = later, earlier  # depends_on & co: target comes first
            key = source * n + target
            if key not in seen:
                seen.add(key)
                return source, target
        return None

    def _add_external(
        self,
        source_id: str,
        status_values: list[str],
        status_cum: list[int],
        risk_values: list[str],
        risk_cum: list[int],
    ) -> None:
        rng = self.rng
        target, vendor, owner = EXTERNAL_TARGETS[rng.randrange(len(EXTERNAL_TARGETS))]
        sla = rng.randint(-60, 120)
        self.deps.append(
            {
                "id": f"dep-{len(self.deps) + 1:0{self.id_width}d}",
                "sourceItemId": source_id,
                "targetItemId": None,
                "dependencyType": "depends_on",
                "riskLevel": rng.choices(risk_values, cum_weights=risk_cum)[0],
                "status": rng.choices(status_values, cum_weights=status_cum)[0],
                "isExternal": True,
                "externalTarget": target,
                "externalOwner": owner,
                "contactEmail": f"{owner.split()[0].lower()}@{vendor.split()[0].lower()}.example",
                "vendor": vendor,
                "slaDate": self.dates[sla],
                "escalationDate": self.dates[sla + 3],
                "createdByUserId": USER_ID,
                "createdAt": self.timestamps[len(self.deps) % len(self.timestamps)],
            }
        )


def _dataset(
    sow_ids: list[str],
    sow_sizes: list[int],
    deps: int,
    types_spec: tuple[tuple[str, ...], tuple[int, ...]],
    window: int,
    local_share: float,
    seed: int,
    today: datetime.date | None,
) -> dict[str, Any]:
    today = today or datetime.date.today()
    total_items = sum(sow_sizes)
    if deps > 0 and total_items == 0:
        raise ValueError("dependencies need at least one item")
    rng = random.Random(seed)
    width = max(6, len(str(max(total_items, deps))))
    builder = _Builder(rng, today, width)
    dep_shares = _split(deps, sow_sizes)  # dependencies follow the items around
    for sow_id, size, share in zip(sow_ids, sow_sizes, dep_shares, strict=True):
        ids = builder.add_sow_items(sow_id, size)
        builder.add_sow_deps(ids, share, types_spec, window, local_share)
    data = _base_records(today)
    data["sows"] = [
        {"id": sow_id, "projectId": PROJECT_ID, "title": f"Bench SOW {k + 1}"}
        for k, sow_id in enumerate(sow_ids)
    ]
    data["items"] = builder.items
    data["dependencies"] = builder.deps
    return data


def big_dataset(
    sows: int, items: int, deps: int, seed: int = 1, today: datetime.date | None = None
) -> dict[str, Any]:
    """One org/user/client/project, `sows` SOWs, `items` items, `deps` dependencies.

    Items are spread evenly over the SOWs; dependencies stay inside their SOW and
    are spread in proportion to the items. Same arguments, same dataset (dates are
    relative to `today`, default the current date).
    """
    if sows < 1:
        raise ValueError("sows must be at least 1")
    width = max(3, len(str(sows)))
    sow_ids = [f"sow-bench-{k + 1:0{width}d}" for k in range(sows)]
    sizes = _split(items, [1] * sows)
    return _dataset(sow_ids, sizes, deps, MIXED_TYPES, window=50, local_share=0.7, seed=seed, today=today)


def chain_heavy_sow(
    items: int, deps: int, seed: int = 1, today: datetime.date | None = None
) -> dict[str, Any]:
    """A single SOW with dense, mostly ordered, mostly local dependencies.

    Meant for the worst case of chain and cycle checks: long paths and many edges
    per item (e.g. 10,000 items and 50,000 dependencies).
    """
    return _dataset(
        ["sow-chain"], [items], deps, CHAIN_TYPES, window=8, local_share=0.9, seed=seed, today=today
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sows", type=int, default=20, help="number of SOWs (default 20)")
    parser.add_argument("--items", type=int, default=100_000, help="total items")
    parser.add_argument("--deps", type=int, default=100_000, help="total dependencies")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--chain-heavy", action="store_true", help="one SOW with dense dependency chains (ignores --sows)"
    )
    parser.add_argument(
        "--today",
        type=datetime.date.fromisoformat,
        default=None,
        help="reference date YYYY-MM-DD for SLA dates (default: today)",
    )
    parser.add_argument("-o", "--output", default="-", help="output file ('-' for stdout)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    if args.chain_heavy:
        data = chain_heavy_sow(args.items, args.deps, args.seed, args.today)
    else:
        data = big_dataset(args.sows, args.items, args.deps, args.seed, args.today)
    built = time.perf_counter()
    # json.dumps (one shot) uses the C encoder, json.dump (streaming) does not: several
    # times faster for a file of this size. Compact separators: it is for machines.
    text = json.dumps(data, separators=(",", ":"))
    if args.output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    done = time.perf_counter()
    print(
        f"{len(data['sows'])} SOWs, {len(data['items'])} items, "
        f"{len(data['dependencies'])} dependencies: built in {built - started:.2f}s, "
        f"written in {done - built:.2f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
