"""Property-based tests of the dependency graph rules (hypothesis).

* The pure algorithms (``find_cycles``, ``critical_path``, ``ordering_edge``) are
  compared with brute-force references on random small graphs.
* A state machine drives the real service with random sequences of creates,
  status updates, deletes of dependencies and deletes of items, and checks after
  every step that: each answer (accepted, refused as a cycle, 404) is the one an
  independent model predicts; a refusal changed nothing; the stored ordering
  columns match the rows; and the non-cancelled dependencies are acyclic.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import pairwise
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from sowctl.foundation import clock
from sowctl.foundation.errors import CycleDetected, InvalidInput, NotFound
from sowctl.schemas.dependencies import DependencyCreate, DependencyUpdate
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import dependencies as service
from sowctl.services import graph, graph_ranks, items, sows
from sowctl.services.access import Caller
from sowctl.services.dataset import import_dataset
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction
from tests.support.dataset import store_raw_ordering_edges

TYPES = ("depends_on", "blocks", "related_to", "prerequisite", "successor")
STATUSES = ("active", "resolved", "cancelled", "blocked")
CALLER = Caller(user_id="user-prop", organization_id="org-prop", role="member")

# --- brute-force references -----------------------------------------------------------


def reachable(edges: Iterable[tuple[str, str]], start: str) -> set[str]:
    """Nodes reachable from ``start`` in one or more steps."""
    succ: dict[str, set[str]] = {}
    for before, after in edges:
        succ.setdefault(before, set()).add(after)
    seen: set[str] = set()
    todo = list(succ.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(succ.get(node, ()))
    return seen


def has_cycle(edges: list[tuple[str, str]]) -> bool:
    nodes = {node for edge in edges for node in edge}
    return any(node in reachable(edges, node) for node in nodes)


def is_waits_for_cycle(cycle: list[str], edges: set[tuple[str, str]]) -> bool:
    """Each item waits for the next (the next comes first), the last for the first."""
    return all((nxt, node) in edges for node, nxt in pairwise([*cycle, cycle[0]]))


def longest_path_length(edges: set[tuple[str, str]]) -> int:
    """Items on the longest path of a DAG, by memoised search (fine for small graphs)."""
    succ: dict[str, list[str]] = {}
    for before, after in edges:
        succ.setdefault(before, []).append(after)
    memo: dict[str, int] = {}

    def longest_from(node: str) -> int:
        if node not in memo:
            memo[node] = 1 + max((longest_from(nxt) for nxt in succ.get(node, ())), default=0)
        return memo[node]

    nodes = {node for edge in edges for node in edge}
    return max((longest_from(node) for node in nodes), default=0)


small_graphs = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 7)).map(lambda e: (f"n{e[0]}", f"n{e[1]}")),
    max_size=20,
)


# --- pure algorithms ---------------------------------------------------------------------


@given(small_graphs)
def test_find_cycles_reports_one_real_cycle_per_tangle(edges: list[tuple[str, str]]) -> None:
    cycles = graph.find_cycles(edges)
    assert (cycles != []) == has_cycle(edges)
    edge_set = set(edges)
    tangles = {
        frozenset({node} | {o for o in reachable(edges, node) if node in reachable(edges, o)})
        for node in {n for e in edges for n in e}
        if node in reachable(edges, node)
    }
    assert len(cycles) == len(tangles)
    for cycle in cycles:
        assert len(set(cycle)) == len(cycle)
        assert is_waits_for_cycle(cycle, edge_set)
        tangle = next(t for t in tangles if cycle[0] in t)
        assert cycle[0] == min(tangle) and set(cycle) <= tangle
    assert cycles == sorted(cycles, key=lambda c: c[0])


@given(small_graphs)
def test_critical_path_is_a_longest_chain_outside_cycles(edges: list[tuple[str, str]]) -> None:
    path = graph.critical_path(edges)
    tangled = {n for n in {n for e in edges for n in e} if n in reachable(edges, n)}
    same_tangle = {(a, b) for a, b in edges if a in tangled and b in tangled and a in reachable(edges, b)}
    dag = set(edges) - same_tangle
    assert not has_cycle(list(dag))
    expected = longest_path_length(dag)
    assert len(path) == (expected if expected >= 2 else 0)
    assert all((a, b) in dag for a, b in pairwise(path))
    assert path == graph.critical_path(list(reversed(edges)))  # order of input does not matter


@pytest.mark.slow  # a stress test: 30,000-long chains
def test_algorithms_do_not_recurse_on_very_deep_chains() -> None:
    chain = [(f"i{n:05d}", f"i{n + 1:05d}") for n in range(30_000)]
    assert graph.critical_path(chain) == [f"i{n:05d}" for n in range(30_001)]
    looped = [*chain, ("i30000", "i00000")]
    (cycle,) = graph.find_cycles(looped)
    assert len(cycle) == 30_001 and cycle[0] == "i00000" and cycle[1] == "i30000"
    assert graph.critical_path(looped) == []


@pytest.mark.parametrize(
    ("dep_type", "status", "external", "expected"),
    [
        ("depends_on", "active", False, ("T", "S")),
        ("prerequisite", "blocked", False, ("T", "S")),
        ("successor", "resolved", False, ("T", "S")),
        ("blocks", "active", False, ("S", "T")),
        ("related_to", "active", False, None),
        ("depends_on", "cancelled", False, None),
        ("blocks", "cancelled", False, None),
        ("depends_on", "active", True, None),
    ],
)
def test_ordering_edge(dep_type: str, status: str, external: bool, expected) -> None:
    target = None if external else "T"
    assert graph.ordering_edge(dep_type, "S", target, status, external) == expected


# --- the service under random operation sequences -----------------------------------------------


class DependencyMachine(RuleBasedStateMachine):
    """Random operations on one fresh SOW, checked against an in-memory model."""

    def __init__(self) -> None:
        super().__init__()
        sow_id = sows.create_sow(CALLER, SowCreate(title="prop")).id
        self.sow_id = sow_id

        def add(kind: str, parent: str | None = None) -> str:
            data = ItemCreate(title=kind, type=kind, parent_item_id=parent)
            return items.create_item(CALLER, sow_id, data).id

        # A small hierarchy, so deleting item 0 also deletes 1, 2 and 3.
        root = add("requirement")
        task = add("task_item", root)
        other = add("task_item", root)
        self.items = [root, task, other, add("task_item", other), add("task_item"), add("task_item")]
        self.children = {root: [task, other], other: [self.items[3]]}
        self.live: set[str] = set(self.items)
        self.deps: dict[str, dict] = {}  # id -> {"source", "target", "type", "status"}

    # -- model helpers

    def model_edges(self, skip: str | None = None) -> list[tuple[str, str]]:
        edges = []
        for dep_id, dep in self.deps.items():
            edge = graph.ordering_edge(
                dep["type"], dep["source"], dep["target"], dep["status"], dep["target"] is None
            )
            if edge is not None and dep_id != skip:
                edges.append(edge)
        return edges

    def closes_cycle(self, edge: tuple[str, str] | None, skip: str | None = None) -> bool:
        if edge is None:
            return False
        before, after = edge
        return before in reachable(self.model_edges(skip), after) or before == after

    def snapshot(self) -> list[tuple]:
        ids = list(self.items)
        query = m.Dependency.select().where(
            m.Dependency.source_item.in_(ids) | m.Dependency.target_item.in_(ids)
        )
        return sorted(query.order_by(m.Dependency.id).tuples())

    def expect_refusal(self, error: type[Exception], action) -> Exception:
        before = self.snapshot()
        with pytest.raises(error) as caught:
            action()
        assert self.snapshot() == before
        return caught.value

    # -- rules

    # -1 as the target index means an external dependency.
    @rule(source=st.integers(0, 5), target_index=st.integers(-1, 5), dep_type=st.sampled_from(TYPES))
    def create(self, source: int, target_index: int, dep_type: str) -> None:
        source_id = self.items[source]
        target_id = self.items[target_index] if target_index >= 0 else None
        body = {"sourceItemId": source_id, "dependencyType": dep_type, "riskLevel": "low"}
        body.update({"targetItemId": target_id} if target_id else {"externalTarget": "Vendor"})
        data = DependencyCreate.model_validate(body)

        def action():
            return service.create_dependency(CALLER, data)

        if target_id == source_id:
            self.expect_refusal(InvalidInput, action)
            return
        if source_id not in self.live or (target_id is not None and target_id not in self.live):
            self.expect_refusal(NotFound, action)
            return
        edge = graph.ordering_edge(dep_type, source_id, target_id, "active", target_id is None)
        if self.closes_cycle(edge):
            error = self.expect_refusal(CycleDetected, action)
            # The named path is a real cycle once the new edge is added.
            assert error.path[0] == error.path[-1]
            assert is_waits_for_cycle(error.path[:-1], {*self.model_edges(), edge})
            return
        dep = action()
        self.deps[dep.id] = {"source": source_id, "target": target_id, "type": dep_type, "status": "active"}

    @rule(pick=st.integers(0, 10_000), status=st.sampled_from(STATUSES))
    def update_status(self, pick: int, status: str) -> None:
        if not self.deps:
            return
        dep_id = sorted(self.deps)[pick % len(self.deps)]
        dep = self.deps[dep_id]
        data = DependencyUpdate.model_validate({"status": status})

        def action():
            return service.update_dependency(CALLER, dep_id, data)

        edge = graph.ordering_edge(dep["type"], dep["source"], dep["target"], status, dep["target"] is None)
        if dep["status"] == "cancelled" and self.closes_cycle(edge, skip=dep_id):
            self.expect_refusal(CycleDetected, action)
            return
        assert action().status == status
        dep["status"] = status

    @rule(pick=st.integers(0, 10_000))
    def delete_dependency(self, pick: int) -> None:
        if not self.deps:
            return
        dep_id = sorted(self.deps)[pick % len(self.deps)]
        service.delete_dependency(CALLER, dep_id)
        del self.deps[dep_id]
        self.expect_refusal(NotFound, lambda: service.delete_dependency(CALLER, dep_id))

    @rule(index=st.integers(0, 5))
    def delete_item(self, index: int) -> None:
        item_id = self.items[index]
        if item_id not in self.live:
            self.expect_refusal(NotFound, lambda: items.delete_item(CALLER, item_id))
            return
        items.delete_item(CALLER, item_id)
        doomed, todo = set(), [item_id]
        while todo:
            node = todo.pop()
            doomed.add(node)
            todo.extend(self.children.get(node, ()))
        self.live -= doomed
        self.deps = {
            dep_id: dep
            for dep_id, dep in self.deps.items()
            if dep["source"] not in doomed and dep["target"] not in doomed
        }

    # -- invariants

    @invariant()
    def database_matches_the_model(self) -> None:
        rows = {row.id: row for row in m.Dependency.select().where(m.Dependency.source_item.in_(self.items))}
        assert set(rows) == set(self.deps)
        for dep_id, row in rows.items():
            dep = self.deps[dep_id]
            assert (row.source_item_id, row.target_item_id, row.status) == (
                dep["source"],
                dep["target"],
                dep["status"],
            )
            edge = graph.ordering_edge(
                row.dependency_type, row.source_item_id, row.target_item_id, row.status, row.is_external
            )
            assert (row.before_item_id, row.after_item_id) == (edge or (None, None))

    @invariant()
    def non_cancelled_dependencies_are_acyclic(self) -> None:
        stored = [
            (row.before_item_id, row.after_item_id)
            for row in m.Dependency.select().where(m.Dependency.source_item.in_(self.items))
            if row.status != "cancelled" and row.before_item_id is not None
        ]
        assert not has_cycle(stored)
        assert graph.is_acyclic(stored)


@pytest.mark.slow
@pytest.mark.usefixtures("unhurried_database")
def test_random_operation_sequences_keep_the_graph_acyclic(db) -> None:
    clock.set_fixed_now(datetime(2026, 3, 16, 12, 0, 0))
    run_state_machine_as_test(
        DependencyMachine,
        settings=settings(
            max_examples=60,
            stateful_step_count=40,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# --- the maintained topological order (graph.add_ordering_edge) ---------------------------------


def org_edges(organization_id: str) -> list[tuple[str, str]]:
    """The organization's stored ordering edges (non-cancelled, internal, ordered types)."""
    query = (
        m.Dependency.select(m.Dependency.before_item_id, m.Dependency.after_item_id)
        .join(m.Sow)
        .join(m.Project)
        .where((m.Project.organization == organization_id) & m.Dependency.before_item_id.is_null(False))
    )
    return list(query.tuples())


def org_ranks(organization_id: str) -> dict[str, int | None]:
    query = (
        m.Item.select(m.Item.id, m.Item.topo_rank)
        .join(m.Sow)
        .join(m.Project)
        .where(m.Project.organization == organization_id)
    )
    return dict(query.tuples())


def assert_rank_invariant(organization_id: str) -> None:
    """Unless marked stale: acyclic, every edge rises in rank, ranks distinct in the organization."""
    assert not graph.ranks_stale(organization_id)
    edges = org_edges(organization_id)
    assert not has_cycle(edges)
    ranks = org_ranks(organization_id)
    for before, after in edges:
        assert ranks[before] is not None and ranks[after] is not None, (before, after)
        assert ranks[before] < ranks[after], (before, after, ranks[before], ranks[after])
    ranked = [rank for rank in ranks.values() if rank is not None]
    assert len(ranked) == len(set(ranked))


class RankedGraphMachine(RuleBasedStateMachine):
    """Two organizations under random creates, status changes (cancel, reactivate),
    deletes, new items and imports (which may bring cycles), against a reference model
    that walks every edge. After every step each organization either holds the rank
    invariant or is marked stale, and one whose edges form a cycle is always stale.
    """

    def __init__(self) -> None:
        super().__init__()
        tag = clock.new_id()[:8]
        self.orgs = [f"org-a-{tag}", f"org-b-{tag}"]
        self.callers = {
            org: Caller(user_id="user-prop", organization_id=org, role="member") for org in self.orgs
        }
        self.sow: dict[str, str] = {}
        self.items: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self.live: set[str] = set()
        self.deps: dict[str, dict] = {}  # id -> {"org", "source", "target", "type", "status"}
        for org in self.orgs:
            self.sow[org] = sows.create_sow(self.callers[org], SowCreate(title=org)).id
            self.items[org] = []
            root = self._new_item(org, "requirement")
            self.children[root] = [self._new_item(org, "task_item", root)]
            for _ in range(4):
                self._new_item(org, "task_item")

    def _new_item(self, org: str, kind: str, parent: str | None = None) -> str:
        data = ItemCreate(title=kind, type=kind, parent_item_id=parent)
        item_id = items.create_item(self.callers[org], self.sow[org], data).id
        self.items[org].append(item_id)
        self.live.add(item_id)
        return item_id

    # -- the reference model: plain walks over every edge

    def model_edges(self, org: str | None = None, skip: str | None = None) -> list[tuple[str, str]]:
        edges = []
        for dep_id, dep in self.deps.items():
            if dep_id == skip or (org is not None and dep["org"] != org):
                continue
            edge = graph.ordering_edge(
                dep["type"], dep["source"], dep["target"], dep["status"], dep["target"] is None
            )
            if edge is not None:
                edges.append(edge)
        return edges

    def closes_cycle(self, edge: tuple[str, str] | None, skip: str | None = None) -> bool:
        if edge is None:
            return False
        before, after = edge
        return before == after or before in reachable(self.model_edges(skip=skip), after)

    def snapshot(self) -> list[tuple]:
        return sorted(m.Dependency.select().where(m.Dependency.id.in_(list(self.deps) or [""])).tuples())

    def expect_refusal(self, error: type[Exception], action) -> Exception:
        before = self.snapshot()
        with pytest.raises(error) as caught:
            action()
        assert self.snapshot() == before
        return caught.value

    def check_after_edge_added(self, org: str) -> None:
        """Adding an edge recomputes stale ranks: only a cycle in the stored edges keeps them stale."""
        assert graph.ranks_stale(org) == has_cycle(self.model_edges(org))

    def expect_cycle_refusal(self, org: str, action) -> CycleDetected:
        """A refused edge changes nothing: not the dependencies, not the ranks, not the marks."""
        stale, ranks = graph.ranks_stale(org), org_ranks(org)
        error = self.expect_refusal(CycleDetected, action)
        assert graph.ranks_stale(org) == stale
        assert org_ranks(org) == ranks
        return error

    # -- rules

    @rule(
        org=st.integers(0, 1),
        source=st.integers(0, 50),
        target_index=st.integers(-1, 50),
        dep_type=st.sampled_from(TYPES),
    )
    def create(self, org: int, source: int, target_index: int, dep_type: str) -> None:
        org_id = self.orgs[org]
        pool = self.items[org_id]
        source_id = pool[source % len(pool)]
        target_id = pool[target_index % len(pool)] if target_index >= 0 else None
        body = {"sourceItemId": source_id, "dependencyType": dep_type, "riskLevel": "low"}
        body.update({"targetItemId": target_id} if target_id else {"externalTarget": "Vendor"})
        data = DependencyCreate.model_validate(body)

        def action():
            return service.create_dependency(self.callers[org_id], data)

        if target_id == source_id:
            self.expect_refusal(InvalidInput, action)
            return
        if source_id not in self.live or (target_id is not None and target_id not in self.live):
            self.expect_refusal(NotFound, action)
            return
        edge = graph.ordering_edge(dep_type, source_id, target_id, "active", target_id is None)
        if self.closes_cycle(edge):
            error = self.expect_cycle_refusal(org_id, action)
            assert error.path[0] == error.path[-1]
            assert is_waits_for_cycle(error.path[:-1], {*self.model_edges(), edge})
            assert str(error) == "circular dependency: " + " -> ".join(error.path)
            return
        dep = action()
        self.deps[dep.id] = {
            "org": org_id,
            "source": source_id,
            "target": target_id,
            "type": dep_type,
            "status": "active",
        }
        if edge is not None:
            self.check_after_edge_added(org_id)

    @rule(pick=st.integers(0, 10_000), status=st.sampled_from(STATUSES))
    def update_status(self, pick: int, status: str) -> None:
        if not self.deps:
            return
        dep_id = sorted(self.deps)[pick % len(self.deps)]
        dep = self.deps[dep_id]
        data = DependencyUpdate.model_validate({"status": status})

        def action():
            return service.update_dependency(self.callers[dep["org"]], dep_id, data)

        edge = graph.ordering_edge(dep["type"], dep["source"], dep["target"], status, dep["target"] is None)
        reactivates = dep["status"] == "cancelled" and edge is not None
        if reactivates and self.closes_cycle(edge, skip=dep_id):
            self.expect_cycle_refusal(dep["org"], action)
            return
        assert action().status == status
        dep["status"] = status
        if reactivates:
            self.check_after_edge_added(dep["org"])

    @rule(pick=st.integers(0, 10_000))
    def delete_dependency(self, pick: int) -> None:
        if not self.deps:
            return
        dep_id = sorted(self.deps)[pick % len(self.deps)]
        service.delete_dependency(self.callers[self.deps[dep_id]["org"]], dep_id)
        del self.deps[dep_id]

    @rule(org=st.integers(0, 1), index=st.integers(0, 50))
    def delete_item(self, org: int, index: int) -> None:
        org_id = self.orgs[org]
        item_id = self.items[org_id][index % len(self.items[org_id])]
        if item_id not in self.live:
            return
        items.delete_item(self.callers[org_id], item_id)
        doomed, todo = set(), [item_id]
        while todo:
            node = todo.pop()
            doomed.add(node)
            todo.extend(self.children.get(node, ()))
        self.live -= doomed
        self.deps = {
            dep_id: dep
            for dep_id, dep in self.deps.items()
            if dep["source"] not in doomed and dep["target"] not in doomed
        }

    @rule(org=st.integers(0, 1))
    def add_item(self, org: int) -> None:
        self._new_item(self.orgs[org], "task_item")

    @rule(
        org=st.integers(0, 1),
        with_item=st.booleans(),
        records=st.lists(
            st.tuples(
                st.integers(0, 50), st.integers(0, 50), st.sampled_from(TYPES), st.sampled_from(STATUSES)
            ),
            min_size=1,
            max_size=5,
        ),
    )
    def import_dependencies(self, org: int, with_item: bool, records: list) -> None:
        """An import stores edges as they are, cycles included, and marks the organization stale."""
        org_id = self.orgs[org]
        other = self.orgs[1 - org]
        other_stale = graph.ranks_stale(other)
        data: dict[str, list] = {"items": [], "dependencies": []}
        pool = [item for item in self.items[org_id] if item in self.live]
        if with_item:
            new_id = f"imported-{clock.new_id()}"
            data["items"].append(
                {"id": new_id, "sowId": self.sow[org_id], "title": "Imported", "type": "task_item"}
            )
            pool.append(new_id)
        if not pool:  # every item of the organization was deleted
            return
        added = {}
        for source, target, dep_type, status in records:
            source_id, target_id = pool[source % len(pool)], pool[target % len(pool)]
            if source_id == target_id:
                continue
            dep_id = f"imported-{clock.new_id()}"
            data["dependencies"].append(
                {
                    "id": dep_id,
                    "sourceItemId": source_id,
                    "targetItemId": target_id,
                    "dependencyType": dep_type,
                    "riskLevel": "low",
                    "status": status,
                }
            )
            added[dep_id] = {
                "org": org_id,
                "source": source_id,
                "target": target_id,
                "type": dep_type,
                "status": status,
            }
        stale = graph.ranks_stale(org_id)
        import_dataset(data)
        if with_item:
            self.items[org_id].append(new_id)
            self.live.add(new_id)
        self.deps.update(added)
        ordered = any(
            graph.ordering_edge(d["type"], d["source"], d["target"], d["status"], False)
            for d in added.values()
        )
        assert graph.ranks_stale(org_id) == (stale or ordered)
        assert graph.ranks_stale(other) == other_stale  # the other organization is untouched

    @rule(
        org=st.integers(0, 1),
        picks=st.lists(st.integers(0, 50), min_size=2, max_size=4, unique=True),
        chance=st.integers(0, 2),
    )
    def import_a_cycle(self, org: int, picks: list[int], chance: int) -> None:
        """An import that surely holds a cycle: each item depends on the next, the last on the first.

        Only one time in three, so that ranked organizations stay common too.
        """
        if chance:
            return
        org_id = self.orgs[org]
        pool = [item for item in self.items[org_id] if item in self.live]
        ring = list(dict.fromkeys(pool[pick % len(pool)] for pick in picks)) if pool else []
        if len(ring) < 2:
            return
        records = []
        for source_id, target_id in pairwise([*ring, ring[0]]):
            dep_id = f"ring-{clock.new_id()}"
            records.append(
                {
                    "id": dep_id,
                    "sourceItemId": source_id,
                    "targetItemId": target_id,
                    "dependencyType": "depends_on",
                    "riskLevel": "low",
                }
            )
            self.deps[dep_id] = {
                "org": org_id,
                "source": source_id,
                "target": target_id,
                "type": "depends_on",
                "status": "active",
            }
        import_dataset({"dependencies": records})
        assert graph.ranks_stale(org_id)

    # -- invariants

    @invariant()
    def database_matches_the_model(self) -> None:
        ids = [item for org in self.orgs for item in self.items[org]]
        rows = {row.id: row for row in m.Dependency.select().where(m.Dependency.source_item.in_(ids))}
        assert set(rows) == set(self.deps)
        for dep_id, row in rows.items():
            dep = self.deps[dep_id]
            assert (row.source_item_id, row.target_item_id, row.status) == (
                dep["source"],
                dep["target"],
                dep["status"],
            )
            edge = graph.ordering_edge(
                row.dependency_type, row.source_item_id, row.target_item_id, row.status, row.is_external
            )
            assert (row.before_item_id, row.after_item_id) == (edge or (None, None))

    @invariant()
    def each_organization_is_ranked_or_stale(self) -> None:
        for org in self.orgs:
            if has_cycle(self.model_edges(org)):
                assert graph.ranks_stale(org)
            if not graph.ranks_stale(org):
                assert_rank_invariant(org)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gap", "probe"),
    [(graph_ranks.GAP, graph_ranks.PROBE), (1, 1), (2, 2)],
    ids=["spaced", "no-gaps", "tiny-gaps"],
)
@pytest.mark.usefixtures("unhurried_database")
def test_random_operations_keep_the_topological_ranks(db, monkeypatch, gap: int, probe: int) -> None:
    """Also with ranks handed out without gaps, or with gaps that fill at once, and walks
    that stop after one or two items: the moves into gaps, the full walks after a probe
    and the old deal-out all run on these small graphs."""
    monkeypatch.setattr(graph_ranks, "GAP", gap)
    monkeypatch.setattr(graph_ranks, "PROBE", probe)
    clock.set_fixed_now(datetime(2026, 3, 16, 12, 0, 0))
    run_state_machine_as_test(
        RankedGraphMachine,
        settings=settings(
            max_examples=50,
            stateful_step_count=40,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# --- the order, case by case ----------------------------------------------------------------------

ORG = "org-rank"
RANK_CALLER = Caller(user_id="user-rank", organization_id=ORG, role="member")


def _items(count: int, caller: Caller = RANK_CALLER) -> list[str]:
    sow_id = sows.create_sow(caller, SowCreate(title="ranks")).id
    return [
        items.create_item(caller, sow_id, ItemCreate(title=f"i{n}", type="task_item")).id
        for n in range(count)
    ]


def _after(first: str, then: str, caller: Caller = RANK_CALLER) -> str:
    """``then`` depends on ``first``: the ordering edge first -> then."""
    body = {"sourceItemId": then, "targetItemId": first, "dependencyType": "depends_on", "riskLevel": "low"}
    return service.create_dependency(caller, DependencyCreate.model_validate(body)).id


def _ranks(*ids: str) -> list[int | None]:
    ranks = dict(m.Item.select(m.Item.id, m.Item.topo_rank).where(m.Item.id.in_(ids)).tuples())
    return [ranks[i] for i in ids]


def test_new_items_are_placed_without_a_walk(db, monkeypatch) -> None:
    a, b, c, d = _items(4)
    assert _ranks(a, b, c, d) == [None] * 4  # no edge, no rank
    monkeypatch.setattr(graph_ranks, "walk", lambda *args, **kwargs: pytest.fail("walked"))
    _after(a, b)  # both new: appended in order
    _after(b, c)  # a new last item goes after everything
    _after(d, a)  # a new first item goes before everything
    rank_a, rank_b, rank_c, rank_d = _ranks(a, b, c, d)
    assert rank_d < rank_a < rank_b < rank_c
    _after(a, c)  # agrees with the ranks: accepted as it is
    assert_rank_invariant(ORG)


def test_an_edge_against_the_order_moves_only_the_smaller_side(db) -> None:
    a, b, c, d, e, x = _items(6)
    _after(a, b)
    _after(b, c)
    _after(d, e)  # ranks now: a < b < c < d < e
    _after(x, e)  # x, new, goes before everything
    ranks_before = dict(zip((a, b, c, d, e, x), _ranks(a, b, c, d, e, x), strict=True))
    assert ranks_before[x] < ranks_before[a] < ranks_before[c] < ranks_before[d]
    _after(e, a)  # e before a: against the order, no cycle
    assert_rank_invariant(ORG)
    ranks_after = dict(zip((a, b, c, d, e, x), _ranks(a, b, c, d, e, x), strict=True))
    # a, b, c must follow d, e: the two of d and e moved into the free ranks below a.
    assert {node for node in ranks_after if ranks_after[node] != ranks_before[node]} == {d, e}
    assert ranks_after[x] < ranks_after[d] < ranks_after[e] < ranks_after[a] < ranks_after[b] < ranks_after[c]


def test_a_cycle_against_the_order_is_refused_with_the_same_path(db) -> None:
    a, b, c = _items(3)
    _after(a, b)
    _after(b, c)
    ranks = _ranks(a, b, c)
    with pytest.raises(CycleDetected) as caught:
        _after(c, a)
    assert caught.value.path == [c, b, a, c]
    assert str(caught.value) == f"circular dependency: {c} -> {b} -> {a} -> {c}"
    assert _ranks(a, b, c) == ranks  # a refusal moves nothing
    assert graph.find_closing_cycle(c, a) == caught.value.path  # the walk names the same cycle


def test_reactivation_against_the_order_reorders_or_is_refused(db) -> None:
    a, b, c = _items(3)
    first = _after(a, b)
    service.update_dependency(RANK_CALLER, first, DependencyUpdate(status="cancelled"))
    _after(b, c)
    _after(c, a)  # fine while a -> b is cancelled: c before a, a now after b and c
    with pytest.raises(CycleDetected):
        service.update_dependency(RANK_CALLER, first, DependencyUpdate(status="active"))
    assert_rank_invariant(ORG)


def test_an_import_marks_organizations_stale_and_the_next_edge_recomputes(db) -> None:
    a, b, c = _items(3)
    other = Caller(user_id="user-rank", organization_id="org-other", role="member")
    x, y = _items(2, other)
    _after(x, y, other)
    assert not graph.ranks_stale(ORG) and not graph.ranks_stale("org-other")
    record = {"riskLevel": "low", "dependencyType": "depends_on"}
    import_dataset(
        {
            "dependencies": [
                {"id": "imp-1", "sourceItemId": b, "targetItemId": a, **record},  # a -> b
                {"id": "imp-2", "sourceItemId": c, "targetItemId": b, **record},  # b -> c
                {"id": "imp-3", "sourceItemId": a, "targetItemId": c, **record, "status": "cancelled"},
            ]
        }
    )
    assert graph.ranks_stale(ORG)
    assert not graph.ranks_stale("org-other")  # received nothing
    assert _ranks(a, b, c) == [None] * 3
    with pytest.raises(CycleDetected) as caught:  # c -> a closes a -> b -> c
        _after(c, a)
    assert caught.value.path == [c, b, a, c]
    assert graph.ranks_stale(ORG)  # a refusal changes nothing, recomputed ranks included
    assert _ranks(a, b, c) == [None] * 3
    d = _items(1)[0]
    _after(c, d)  # the next accepted edge commits the recomputed ranks
    assert not graph.ranks_stale(ORG)
    assert_rank_invariant(ORG)
    assert_rank_invariant("org-other")
    # Only ordering edges make an organization stale.
    import_dataset(
        {
            "dependencies": [
                {"id": "imp-4", "sourceItemId": a, "targetItemId": c, **record, "status": "cancelled"}
            ]
        }
    )
    assert not graph.ranks_stale(ORG)


def test_an_imported_cycle_falls_back_to_the_walk_until_it_is_broken(db) -> None:
    a, b, c, d = _items(4)
    record = {"riskLevel": "low", "dependencyType": "depends_on"}
    import_dataset(
        {
            "dependencies": [
                {"id": "cyc-1", "sourceItemId": b, "targetItemId": a, **record},  # a -> b
                {"id": "cyc-2", "sourceItemId": c, "targetItemId": b, **record},  # b -> c
                {"id": "cyc-3", "sourceItemId": a, "targetItemId": c, **record},  # c -> a
            ]
        }
    )
    _after(c, d)  # no new cycle: accepted, checked by the walk
    assert graph.ranks_stale(ORG)
    mark = m.Meta.get_by_id(graph.stale_key(ORG)).value
    assert mark.startswith("cycle:") and set(json.loads(mark[len("cycle:") :])) == {"cyc-1", "cyc-2", "cyc-3"}
    with pytest.raises(CycleDetected) as caught:
        _after(d, a)  # d -> a closes a -> b -> c -> d -> a
    assert caught.value.path == [d, c, b, a, d]
    assert graph.ranks_stale(ORG)
    service.update_dependency(RANK_CALLER, "cyc-3", DependencyUpdate(status="cancelled"))
    assert graph.ranks_stale(ORG)  # removing an edge does nothing by itself...
    _after(a, d)  # ...but the next edge finds the cycle gone: ranks again
    assert_rank_invariant(ORG)


def test_edges_stored_without_ranks_or_mark_are_noticed(db) -> None:
    """A bulk writer that forgets ``mark_ranks_stale``: an unranked item with edges gives it away."""
    a, b, c = _items(3)
    sow_id = m.Item.get_by_id(a).sow_id
    store_raw_ordering_edges(sow_id, [(a, b), (b, c)])
    with pytest.raises(CycleDetected):
        _after(c, a)
    d = _items(1)[0]
    _after(c, d)
    assert_rank_invariant(ORG)


def test_long_organization_ids_get_a_key_that_fits(db) -> None:
    long_id = "o" * 64
    key = graph.stale_key(long_id)
    assert len(key) <= 64 and key != graph.stale_key("o" * 63 + "p")
    assert graph.stale_key("org-1") == "ranks-stale:org-1"
    caller = Caller(user_id="u", organization_id=long_id, role="member")
    a, b = _items(2, caller)
    graph.mark_ranks_stale([long_id, None])
    assert graph.ranks_stale(long_id)
    _after(a, b, caller)
    assert_rank_invariant(long_id)


@pytest.fixture
def scratch_url(tmp_path) -> Iterator[str]:
    """A database of its own (a SQLite file, or a new PostgreSQL database), for a test
    that rewinds the schema: the shared PostgreSQL test database must never be left so."""
    target = os.environ.get("SOWCTL_TEST_DB", "sqlite")
    if not target.startswith("postgres"):
        yield str(tmp_path / "scratch.db")
        return
    from tests.support import pg

    name = f"sowctl_scratch_{clock.new_id()[:8]}"
    conn = pg._admin_connection(target)
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    parts = urlsplit(target)
    yield urlunsplit(parts._replace(path="/" + name))
    m.database_proxy.obj.close()
    pg._drop(target, name)


def test_the_rank_migration_upgrades_an_older_database(scratch_url: str) -> None:
    from sowctl.storage import database as db_module
    from sowctl.storage import migrations

    database = db_module.open_database(scratch_url)
    caller = Caller(user_id="u", organization_id="org-mig", role="member")
    a, b = _items(2, caller)
    # Back to the schema before the step: no topo_rank column, no index.
    before_step = migrations.MIGRATIONS.index(migrations._v3_item_topo_rank)
    database.execute_sql("DROP INDEX item_topo_rank")
    database.execute_sql("ALTER TABLE item DROP COLUMN topo_rank")
    m.Meta.update(value=str(before_step)).where(m.Meta.key == "schema_version").execute()
    database.close()
    database = db_module.open_database(scratch_url)
    assert db_module.schema_version() == db_module.SCHEMA_VERSION > before_step
    assert "topo_rank" in {column.name for column in database.get_columns("item")}
    assert any(index.columns == ["topo_rank"] for index in database.get_indexes("item"))
    migrations._v3_item_topo_rank(database)  # again: nothing to do
    assert [index.columns for index in database.get_indexes("item")].count(["topo_rank"]) == 1
    _after(a, b, caller)
    assert_rank_invariant("org-mig")
    database.close()


def test_the_rank_migration_is_idempotent(db) -> None:
    from sowctl.storage import migrations

    migrations._v3_item_topo_rank(db)  # a fresh database already has the column and index
    assert [index.columns for index in db.get_indexes("item")].count(["topo_rank"]) == 1


def test_an_import_waits_for_a_writer_of_the_organization_it_marks(db) -> None:
    """On PostgreSQL the importer's lock is "import", not the organization's; marking the
    organization stale takes that one too, so a dependency create running there is
    never interleaved with an import that leaves its edges unranked."""
    a, b = _items(2)
    holding, release = threading.Event(), threading.Event()
    order: list[str] = []

    def writer() -> None:
        try:
            with write_transaction(f"org:{ORG}"):
                m.Item.select().where(m.Item.id == a).first()  # the transaction has begun
                holding.set()
                release.wait(10)
                order.append("writer commits")
        finally:
            m.database_proxy.close()

    thread = threading.Thread(target=writer)
    thread.start()
    assert holding.wait(10)
    timer = threading.Timer(0.5, release.set)
    timer.start()
    record = {"riskLevel": "low", "dependencyType": "depends_on"}
    import_dataset({"dependencies": [{"id": "late-1", "sourceItemId": b, "targetItemId": a, **record}]})
    order.append("import commits")
    thread.join(10)
    timer.cancel()
    assert order == ["writer commits", "import commits"]
    assert graph.ranks_stale(ORG)
