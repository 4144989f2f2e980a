"""The re-ranking of a dependency against the stored order walks before SQLite's write lock
(``graph.prewalk_ordering_edge``), and under it the walks' result is taken only if nothing
was committed meanwhile; otherwise the walks run again under the lock, so the cycle check
stays race-free. PostgreSQL walks under its organization's lock, as before."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from itertools import pairwise

import peewee as pw
import pytest

from sowctl.foundation.errors import CycleDetected
from sowctl.services import dependencies as service
from sowctl.services import graph, graph_ranks
from sowctl.storage import models as m
from tests.services.test_dependency_cycles import ORG, _after, _items, _ranks, assert_rank_invariant


@pytest.fixture
def walks(db, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each walk of the ranks ran under the dependency service's write lock."""
    locked = [False]
    seen: list[bool] = []
    real_walk, real_transaction = graph_ranks.walk, service.write_transaction

    def walk(*args, **kwargs):
        seen.append(locked[0])
        return real_walk(*args, **kwargs)

    @contextlib.contextmanager
    def transaction(key: str) -> Iterator[None]:
        with real_transaction(key):
            locked[0] = True
            try:
                yield
            finally:
                locked[0] = False

    monkeypatch.setattr(graph_ranks, "walk", walk)
    monkeypatch.setattr(service, "write_transaction", transaction)
    return seen


def _chains() -> tuple[str, ...]:
    a, b, c, d, e = _items(5)
    _after(a, b)
    _after(b, c)
    _after(d, e)  # ranks now: a < b < c < d < e
    return a, b, c, d, e


def _sqlite() -> bool:
    return isinstance(m.database_proxy.obj, pw.SqliteDatabase)


def test_the_walks_of_a_re_ranking_run_before_the_write_lock(walks: list[bool]) -> None:
    a, b, c, d, e = _chains()
    walks.clear()
    _after(e, a)  # e before a: against the order, no cycle; d and e move below a
    assert walks, "the edge against the order was walked"
    assert set(walks) == ({False} if _sqlite() else {True})
    rank_a, rank_b, rank_c, rank_d, rank_e = _ranks(a, b, c, d, e)
    assert rank_d < rank_e < rank_a < rank_b < rank_c
    assert_rank_invariant(ORG)


def test_a_cycle_found_before_the_lock_is_refused_as_under_it(walks: list[bool]) -> None:
    a, b, c, *_ = _chains()
    ranks = _ranks(a, b, c)
    walks.clear()
    with pytest.raises(CycleDetected) as caught:
        _after(c, a)
    assert caught.value.path == [c, b, a, c]
    assert _ranks(a, b, c) == ranks
    assert set(walks) == ({False} if _sqlite() else {True})


def test_a_commit_between_the_walks_and_the_lock_sends_the_walks_under_the_lock(
    walks: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer closes the way for the edge after it was walked: a before e. The walks
    had found no cycle; taken as they were, e before a would store a cycle."""
    a, _, _, _, e = _chains()
    planned: list[graph_ranks.Prewalk | None] = []
    real_prewalk = graph.prewalk_ordering_edge

    def prewalk_then_another_writer(*args):
        result = real_prewalk(*args)
        planned.append(result)
        if len(planned) == 1:  # this test's create, not the other writer's own
            writer = threading.Thread(target=_after_in_thread, args=(a, e))
            writer.start()
            writer.join(30)
        return result

    monkeypatch.setattr(graph, "prewalk_ordering_edge", prewalk_then_another_writer)
    walks.clear()
    with pytest.raises(CycleDetected):
        _after(e, a)
    if _sqlite():
        assert planned[0] is not None and planned[0].cycle is None  # stale: it saw no cycle
    assert True in walks  # walked again under the lock
    edges = [(r.before_item_id, r.after_item_id) for r in m.Dependency.select() if r.before_item_id]
    assert (a, e) in edges and (e, a) not in edges and graph.is_acyclic(edges)
    assert_rank_invariant(ORG)


def _after_in_thread(first: str, then: str) -> None:
    try:
        _after(first, then)
    finally:
        m.database_proxy.close()


def test_concurrent_creates_against_the_order_never_store_a_cycle(db) -> None:
    """Threads (each with its own connection) add edges between two chains, some against the
    order, many of which together would close cycles: each is walked before the lock and
    decided under it, and what is stored stays acyclic with ranks in order. (The interleaving
    is the scheduler's: the stale walk itself is the deterministic test's above.)"""
    size = 5
    xs, ys = _items(size), _items(size)
    for chain in (xs, ys):
        for first, then in pairwise(chain):
            _after(first, then)  # ranks: every x before every y
    against = [(ys[j], xs[k]) for j in range(size) for k in range(size)]
    along = [(xs[k], ys[j]) for j in range(size) for k in range(size)]
    wanted = [edge for pair in zip(against, reversed(along), strict=True) for edge in pair]
    outcomes: list[str] = []
    guard = threading.Lock()
    barrier = threading.Barrier(4)

    def worker(edges: list[tuple[str, str]]) -> None:
        barrier.wait()
        try:
            for first, then in edges:
                try:
                    _after(first, then)
                    result = "created"
                except CycleDetected:
                    result = "refused"
                with guard:
                    outcomes.append(result)
        finally:
            m.database_proxy.close()

    threads = [threading.Thread(target=worker, args=(wanted[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(outcomes) == len(wanted) and "created" in outcomes and "refused" in outcomes
    edges = [(r.before_item_id, r.after_item_id) for r in m.Dependency.select() if r.before_item_id]
    assert graph.is_acyclic(edges)
    assert_rank_invariant(ORG)
