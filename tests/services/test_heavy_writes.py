"""The heavy writes one member may make hold the organization's write lock only briefly.

A reorder of a whole SOW, a dependency against the stored order of a long chain and a
cascade delete of a large subtree write many rows; they used to send one statement per
row under the lock. These tests count the statements a request sends to the database
(at the driver's cursor: one per ``execute``, one per row of an ``executemany``) and the
rows it rewrites, and check that the bulk paths keep every rule: the result, the ranks'
order, and all-or-nothing on a refusal, including a refusal found only under the lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import pairwise

import peewee as pw
import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import CycleDetected, NotFound
from sowctl.schemas.dependencies import DependencyCreate
from sowctl.services import bulk, dependencies, graph, graph_ranks, items
from sowctl.services.access import Caller
from sowctl.storage import models as m

# Thousands of rows a statement: on a loaded machine one call may pass the 30 s deadline, which
# has tests of its own; these assert what is written, not how fast.
pytestmark = pytest.mark.usefixtures("unhurried_database")

ORG, SOW, USER = "org-heavy", "sow-heavy", "user-heavy"
CALLER = Caller(user_id=USER, organization_id=ORG, role="member")
T0 = datetime(2026, 3, 16, 9, 30, 0)
ROWS = 500


class _CountingCursor:
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
    """``[n]``: the statements sent to the database inside the block."""
    count = [0]
    database = m.database_proxy.obj
    plain = database.cursor
    database.cursor = lambda *args, **kwargs: _CountingCursor(plain(*args, **kwargs), count)
    try:
        yield count
    finally:
        del database.cursor


def _insert(model: type[m.BaseModel], rows: list[dict]) -> None:
    for start in range(0, len(rows), ROWS):
        model.insert_many(rows[start : start + ROWS]).execute()


def _item(item_id: str, n: int, parent: str | None = None, kind: str = "task_item") -> dict:
    return {
        "id": item_id,
        "sow": SOW,
        "parent": parent,
        "type": kind,
        "title": item_id,
        "order_index": n,
        "status": "pending",
        "created_by_user_id": USER,
        "created_at": T0,
        "updated_at": T0,
    }


def _depends(source: str, target: str) -> dict:
    """``source`` depends on ``target``: the ordering edge target -> source, no rank checked."""
    return {
        "id": f"dep-{source}-{target}",
        "sow": SOW,
        "source_item": source,
        "target_item": target,
        "dependency_type": "depends_on",
        "risk_level": "low",
        "status": "active",
        "is_external": False,
        "created_at": T0,
        "before_item_id": target,
        "after_item_id": source,
    }


@pytest.fixture
def org(db) -> None:
    """The organization, its project and SOW ``SOW``, with the clock fixed."""
    clock.set_fixed_now(T0)
    m.Organization.create(id=ORG, name=ORG)
    m.Project.create(id="p-heavy", organization=ORG, name="P", created_at=T0, updated_at=T0)
    m.Sow.create(key=SOW, id=SOW, organization=ORG, project="p-heavy", title="S", created_at=T0)


def _order() -> dict[str, int]:
    return dict(m.Item.select(m.Item.id, m.Item.order_index).where(m.Item.sow == SOW).tuples())


def _reorder(entries: list[tuple[str, int]]) -> dict:
    body = {"items": [{"id": item_id, "orderIndex": index} for item_id, index in entries]}
    return operations.call_local("items.reorder", CALLER, {"sowId": SOW}, body=body)


# --- reorder ----------------------------------------------------------------------------------


def test_a_reorder_of_ten_thousand_items_sends_a_few_statements(org) -> None:
    ids = [f"r-{n:05d}" for n in range(10_000)]
    _insert(m.Item, [_item(item_id, n) for n, item_id in enumerate(ids)])
    clock.set_fixed_now(datetime(2026, 3, 17, 8, 0, 0))
    wanted = [(item_id, 10_000 - n) for n, item_id in enumerate(ids)]
    with statements() as sent:
        result = _reorder(wanted)
    # Ten reads before the lock; under it ten writes, ten reads of the moved items and the
    # inserts of their item.updated events (services.events), and the lock.
    assert sent[0] <= 50
    assert result["message"] == "Items reordered successfully"
    assert result["items"] == [{"id": item_id, "orderIndex": index} for item_id, index in wanted]
    assert _order() == dict(wanted)
    touched = m.Item.select().where(
        (m.Item.sow == SOW) & (m.Item.updated_at == datetime(2026, 3, 17, 8, 0, 0))
    )
    assert touched.count() == 10_000


def test_a_reorder_on_a_sqlite_without_update_from_sets_every_index(org, monkeypatch) -> None:
    """SQLite before 3.33 has no UPDATE ... FROM: one UPDATE per row through executemany,
    with the same result and the same check of the rows it updated."""
    monkeypatch.setattr(bulk, "UPDATE_FROM_VALUES", False)
    ids = [f"r-{n:04d}" for n in range(1_500)]
    _insert(m.Item, [_item(item_id, n) for n, item_id in enumerate(ids)])
    wanted = [(item_id, 3 * n) for n, item_id in enumerate(reversed(ids))]
    _reorder(wanted)
    assert _order() == dict(wanted)
    m.Item.delete().where(m.Item.id == ids[7]).execute()
    # Let the check before the lock pass: only the count of updated rows sees the gap.
    monkeypatch.setattr(items, "_require_in_sow", _after_first(items._require_in_sow))
    with pytest.raises(NotFound, match=f"item {ids[7]} not found"):
        _reorder([(item_id, 1) for item_id in ids])
    assert _order() == {item_id: index for item_id, index in wanted if item_id != ids[7]}


def _after_first(check: Callable[..., None]) -> Callable[..., None]:
    """``check`` from its second call on: the first (before the lock) passes."""
    calls = []

    def checked(*args: object) -> None:
        calls.append(args)
        if len(calls) > 1:
            check(*args)

    return checked


@pytest.mark.parametrize("spoiler", ["missing", "other-sow"])
def test_a_long_reorder_naming_one_bad_item_last_changes_nothing(org, spoiler: str) -> None:
    ids = [f"r-{n:05d}" for n in range(3_000)]
    _insert(m.Item, [_item(item_id, n) for n, item_id in enumerate(ids)])
    if spoiler == "other-sow":
        m.Sow.create(
            key="sow-other", id="sow-other", organization=ORG, project="p-heavy", title="O", created_at=T0
        )
        m.Item.create(**{**_item("elsewhere", 0), "sow": "sow-other"})
    bad = "nowhere" if spoiler == "missing" else "elsewhere"
    before = _order()
    with pytest.raises(NotFound, match=f"item {bad} not found in SOW {SOW}"):
        _reorder([*((item_id, 5) for item_id in ids), (bad, 5)])
    assert _order() == before


def test_a_refused_reorder_never_takes_the_write_lock(org, monkeypatch) -> None:
    _insert(m.Item, [_item(f"r-{n}", n) for n in range(3)])

    def no_lock(key: str) -> None:
        raise AssertionError(f"took the write lock {key}")

    monkeypatch.setattr(items, "write_transaction", no_lock)
    with pytest.raises(NotFound, match="item gone not found"):
        _reorder([("r-0", 2), ("gone", 1)])


def test_an_item_deleted_before_the_lock_refuses_the_whole_reorder(org, monkeypatch) -> None:
    """The check before the lock passed; the item went before the lock was taken (another
    request deleted it). The write under the lock updates one row too few, and the whole
    reorder is refused, naming the item, with nothing changed."""
    ids = [f"r-{n:04d}" for n in range(2_500)]
    _insert(m.Item, [_item(item_id, n) for n, item_id in enumerate(ids)])
    check = items._require_in_sow
    calls = []

    def check_then_lose_one(*args: object) -> None:
        calls.append(args)
        check(*args)
        if len(calls) == 1:
            m.Item.delete().where(m.Item.id == ids[1_700]).execute()

    monkeypatch.setattr(items, "_require_in_sow", check_then_lose_one)
    before = _order()
    with pytest.raises(NotFound, match=f"item {ids[1_700]} not found in SOW {SOW}"):
        _reorder([(item_id, 9) for item_id in ids])
    assert len(calls) == 2  # before the lock, and again under it to name the item
    del before[ids[1_700]]
    assert _order() == before


# --- the dependency order ---------------------------------------------------------------------


def _chain(name: str, size: int) -> list[str]:
    """``size`` items each depending on the one before, written straight to the tables (as
    an import leaves them: the organization's ranks marked stale)."""
    ids = [f"{name}-{n:04d}" for n in range(size)]
    _insert(m.Item, [_item(item_id, n) for n, item_id in enumerate(ids)])
    _insert(m.Dependency, [_depends(later, earlier) for earlier, later in pairwise(ids)])
    return ids


def _depend(source: str, target: str) -> str:
    body = {
        "sourceItemId": source,
        "targetItemId": target,
        "dependencyType": "depends_on",
        "riskLevel": "low",
    }
    return dependencies.create_dependency(CALLER, DependencyCreate.model_validate(body)).id


def _ranks() -> dict[str, int | None]:
    return dict(m.Item.select(m.Item.id, m.Item.topo_rank).where(m.Item.sow == SOW).tuples())


def _assert_ranks_in_order() -> None:
    ranks = _ranks()
    edges = m.Dependency.select(m.Dependency.before_item_id, m.Dependency.after_item_id).tuples()
    for before, after in edges.where(m.Dependency.before_item_id.is_null(False)):
        assert ranks[before] < ranks[after], (before, after)
    ranked = [rank for rank in ranks.values() if rank is not None]
    assert len(ranked) == len(set(ranked))


def _ranked() -> None:
    """Rank the organization (the first edge after an import recomputes its ranks)."""
    _insert(m.Item, [_item("lone-a", 0), _item("lone-b", 1)])
    graph.mark_ranks_stale([ORG])
    _depend("lone-b", "lone-a")
    assert not graph.ranks_stale(ORG)


def test_one_item_put_before_a_long_chain_rewrites_one_rank(org) -> None:
    chain = _chain("c", 1_500)  # longer than a walk's probe
    _insert(m.Item, [_item("w", 0), _item("u", 1)])
    _ranked()
    _depend("u", "w")  # both new: w is placed after every ranked item
    before = _ranks()
    assert before["w"] > before[chain[-1]]
    with statements() as sent:
        _depend(chain[0], "w")  # the chain's first item now waits for w
    after = _ranks()
    assert {item for item in after if after[item] != before[item]} == {"w"}
    assert after["w"] < after[chain[0]]
    # On SQLite two more: the PRAGMA data_version before the walks (which run before the
    # write lock there) and under it, where it shows that nothing changed since.
    assert sent[0] <= 14
    _assert_ranks_in_order()


def test_joining_two_long_chains_rewrites_only_the_shorter(org) -> None:
    xs, ys = _chain("x", 1_600), _chain("y", 1_200)
    _ranked()
    before = _ranks()
    assert before[xs[-1]] < before[ys[0]]  # x first, then y (smallest ids first)
    with statements() as sent:
        _depend(xs[0], ys[-1])  # all of y must now come before all of x
    after = _ranks()
    assert {item for item in after if after[item] != before[item]} == set(ys)
    assert after[ys[-1]] < after[xs[0]]
    assert sent[0] <= 20  # two probes, two whole walks, a gap, two writes of a thousand
    _assert_ranks_in_order()


def test_with_no_gap_left_both_sides_are_dealt_out_again(org, monkeypatch) -> None:
    monkeypatch.setattr(graph_ranks, "GAP", 1)  # ranks handed out next to each other
    xs, ys = _chain("x", 30), _chain("y", 20)
    _chain("a", 2)  # ranked before x...
    _chain("z", 2)  # ...and after y: no free rank beyond either end of the new edge
    _ranked()
    before = _ranks()
    _depend(xs[0], ys[-1])
    after = _ranks()
    moved = set(xs) | set(ys)
    assert sorted(after[item] for item in moved) == sorted(before[item] for item in moved)
    assert after[ys[-1]] < after[xs[0]]
    _assert_ranks_in_order()


def test_a_cycle_through_a_long_chain_is_refused_and_moves_nothing(org) -> None:
    chain = _chain("c", 1_200)
    _ranked()
    before = _ranks()
    with pytest.raises(CycleDetected) as caught:
        _depend(chain[0], chain[-1])  # the first waits for the last, which waits for it
    path = caught.value.path
    assert path[0] == path[-1] and set(path) == set(chain) and len(path) == 1_201
    assert _ranks() == before


# --- cascade delete ---------------------------------------------------------------------------


def test_an_item_made_under_a_subtree_while_it_is_deleted_goes_too(org, monkeypatch) -> None:
    """On SQLite the subtree is read before the lock; a child made under it in between, and
    a dependency on that child, go with its parent (ON DELETE CASCADE). PostgreSQL reads
    nothing before the lock: the cascade takes the subtree as it is under the lock."""
    _insert(m.Item, [_item("root", 0, kind="requirement"), _item("kid", 0, "root"), _item("keep", 1)])
    read = items._subtree

    def read_then_grow(root_id: str) -> list[str]:
        doomed = read(root_id)
        m.Item.create(**_item("late", 1, "kid"))
        m.Dependency.create(**_depends("keep", "late"))
        return doomed

    monkeypatch.setattr(items, "_subtree", read_then_grow)
    operations.call_local("items.delete", CALLER, {"itemId": "root"})
    assert set(_order()) == {"keep"}
    assert not m.Dependency.select().exists()


def test_a_cascade_delete_of_a_large_subtree_removes_it_and_its_dependencies(org) -> None:
    rows = [_item("root", 0, kind="requirement")]
    tasks = []
    for r in range(30):
        rows.append(_item(f"req-{r}", r, "root", "requirement"))
        for t in range(100):
            tasks.append(f"task-{r}-{t}")
            rows.append(_item(tasks[-1], t, f"req-{r}"))
    rows += [_item("outside", 1), _item("other", 2)]
    _insert(m.Item, rows)
    deps = [_depends(later, earlier) for earlier, later in pairwise(tasks)]
    deps += [_depends("outside", tasks[1_234]), _depends(tasks[7], "other"), _depends("other", "outside")]
    _insert(m.Dependency, deps)
    with statements() as sent:
        operations.call_local("items.delete", CALLER, {"itemId": "root"})
    assert sent[0] <= 30  # with the reads of what goes and the inserts of its events
    assert set(_order()) == {"outside", "other"}
    assert list(m.Dependency.select(m.Dependency.id).tuples()) == [("dep-other-outside",)]


def _walk_plan(forward: bool, within: int) -> str:
    on_postgres = isinstance(m.database_proxy.obj, pw.PostgresqlDatabase)
    explain = "EXPLAIN" if on_postgres else "EXPLAIN QUERY PLAN"
    rows = m.database_proxy.execute_sql(
        f"{explain} {graph_ranks.walk_sql(forward)}", ("c-0000", 0, within)
    ).fetchall()
    return "\n".join(" ".join(str(part) for part in row) for row in rows)


@pytest.mark.parametrize("forward", [True, False])
def test_a_walk_follows_the_edges_whatever_the_rank_statistics_say(org, forward: bool) -> None:
    chain = _chain("c", 1_200)
    if isinstance(m.database_proxy.obj, pw.PostgresqlDatabase):
        # sampled while unranked (as autovacuum finds a table an import filled): the planner
        # then expects one item in any range of ranks
        m.database_proxy.execute_sql("ANALYZE item")
    _ranked()
    ranks = _ranks()
    start, end = (chain[0], chain[-1]) if forward else (chain[-1], chain[0])
    # The index on the ranks would have the walk read every item in the range at each step
    # (5,000 steps past a 30 s deadline on PostgreSQL); the edges' indexes must drive it.
    assert "item_topo_rank" not in _walk_plan(forward, ranks[end])
    walked = graph_ranks.walk(start, ranks[start], forward=forward, within=ranks[end])
    assert walked == {item: ranks[item] for item in chain}
