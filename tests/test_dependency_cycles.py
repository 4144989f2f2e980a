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

from collections.abc import Iterable
from datetime import datetime
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from sowctl import clock
from sowctl import models as m
from sowctl.errors import CycleDetected, InvalidInput, NotFound
from sowctl.schemas.dependencies import DependencyCreate, DependencyUpdate
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import dependencies as service
from sowctl.services import graph, items, sows
from sowctl.services.access import Caller

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
