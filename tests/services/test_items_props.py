"""Property tests for items: status aggregation, auto orderIndex, atomic reorder.

The aggregation is checked against a deliberately naive recursive reference that
follows the written status rule, on random trees that obey the hierarchy rules.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import HierarchyViolation, InvalidInput, NotFound
from sowctl.services.access import Caller
from sowctl.services.item_rules import calculated_statuses
from sowctl.storage import models as m
from sowctl.storage import tallies

pytestmark = pytest.mark.slow  # property runs, fuzzing, real servers: the full suite only

TYPES = ("requirement", "task_item")
STATUSES = ("pending", "in_progress", "completed", "cancelled")
T0 = datetime(2026, 3, 16, 9, 30, 0)
LOCAL = Caller.local()
DB_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    # The SOW fixture is shared by the examples on purpose: each example empties it first.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@st.composite
def trees(draw, max_size: int = 30) -> list[tuple[str, str, int | None]]:
    """(type, stored status, parent index) nodes; a parent always comes earlier.

    A requirement's parent is a requirement; a task item's parent is anything.
    """
    nodes: list[tuple[str, str, int | None]] = []
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(TYPES))
        allowed = [i for i, node in enumerate(nodes) if kind == "task_item" or node[0] == "requirement"]
        parent = draw(st.none() | st.sampled_from(allowed)) if allowed else None
        nodes.append((kind, draw(st.sampled_from(STATUSES)), parent))
    return nodes


def reference_status(nodes: list[tuple[str, str, int | None]], index: int) -> str:
    """The status rule read literally, with a recursive walk of every descendant."""
    kind, own, _ = nodes[index]
    if kind == "task_item":
        return own

    def descendant_tasks(parent: int) -> list[str]:
        found = []
        for child, (child_kind, child_status, child_parent) in enumerate(nodes):
            if child_parent == parent:
                if child_kind == "task_item":
                    found.append(child_status)
                found.extend(descendant_tasks(child))
        return found

    tasks = descendant_tasks(index)
    if not tasks:
        return own
    if all(status == "cancelled" for status in tasks):
        return "cancelled"
    counted = [status for status in tasks if status != "cancelled"]
    if all(status == "completed" for status in counted):
        return "completed"
    if all(status == "pending" for status in counted):
        return "pending"
    return "in_progress"


@given(trees(), st.randoms(use_true_random=False))
def test_calculated_statuses_match_the_reference(nodes, rnd):
    rows = [
        (f"i{i}", None if p is None else f"i{p}", kind, status) for i, (kind, status, p) in enumerate(nodes)
    ]
    rnd.shuffle(rows)  # the result must not depend on the order rows come in
    shown = calculated_statuses(rows)
    assert shown == {f"i{i}": reference_status(nodes, i) for i in range(len(nodes))}


def test_reference_agrees_with_a_worked_example():
    # r0 > (t1 completed > t2 pending), r3 > t4 cancelled ; the reference itself must be right
    nodes = [
        ("requirement", "pending", None),
        ("task_item", "completed", 0),
        ("task_item", "pending", 1),
        ("requirement", "completed", 0),
        ("task_item", "cancelled", 3),
    ]
    assert [reference_status(nodes, i) for i in range(5)] == [
        "in_progress",
        "completed",
        "pending",
        "cancelled",
        "cancelled",
    ]


@pytest.fixture
def sow(db) -> str:
    clock.set_fixed_now(T0)
    operations.call_local("sows.create", LOCAL, body={"title": "Props", "id": "sow-p"})
    return "sow-p"


def _reset(sow_id: str) -> None:
    m.Item.delete().where(m.Item.sow == sow_id).execute()


@DB_SETTINGS
@given(nodes=trees(max_size=20))
def test_every_response_shows_the_reference_status(sow, nodes):
    _reset(sow)
    m.Item.insert_many(
        [
            {
                "id": f"i{i}",
                "sow": sow,
                "parent": None if parent is None else f"i{parent}",
                "type": kind,
                "title": f"item {i}",
                "status": status,
                "order_index": i,
                "created_at": T0,
                "updated_at": T0,
            }
            for i, (kind, status, parent) in enumerate(nodes)
        ]
    ).execute()
    tallies.recount([sow])  # rows written straight into the table get their counts as an import's do
    expected = {f"i{i}": reference_status(nodes, i) for i in range(len(nodes))}
    listed = operations.call_local("items.list", LOCAL, {"sowId": sow})
    assert {item["id"]: item["status"] for item in listed} == expected
    for i, (kind, _, parent) in enumerate(nodes):
        if kind == "requirement":
            got = operations.call_local("items.get", LOCAL, {"itemId": f"i{i}"})
            assert got["status"] == expected[f"i{i}"]
            if parent is not None:
                siblings = operations.call_local(
                    "items.list", LOCAL, {"sowId": sow}, {"parentId": f"i{parent}"}
                )
                assert {s["id"]: s["status"] for s in siblings}[f"i{i}"] == expected[f"i{i}"]


# (parent index or None, explicit orderIndex or None, type)
creations = st.lists(
    st.tuples(st.none() | st.integers(0, 10), st.none() | st.integers(0, 50), st.sampled_from(TYPES)),
    max_size=15,
)


@DB_SETTINGS
@given(steps=creations)
def test_auto_order_index_is_one_more_than_the_largest_sibling(sow, steps):
    _reset(sow)
    made: list[dict] = []
    for parent_pick, explicit, kind in steps:
        parent = made[parent_pick % len(made)] if (made and parent_pick is not None) else None
        body = {"title": "t", "type": kind}
        if parent is not None:
            body["parentItemId"] = parent["id"]
        if explicit is not None:
            body["orderIndex"] = explicit
        siblings = [
            item["orderIndex"] for item in made if item["parentItemId"] == (parent["id"] if parent else None)
        ]
        if parent is not None and parent["type"] == "task_item" and kind == "requirement":
            with pytest.raises(HierarchyViolation):
                operations.call_local("items.create", LOCAL, {"sowId": sow}, body=body)
            continue
        item = operations.call_local("items.create", LOCAL, {"sowId": sow}, body=body)
        if explicit is not None:
            assert item["orderIndex"] == explicit
        else:
            assert item["orderIndex"] == (max(siblings) + 1 if siblings else 0)
        made.append(item)
    assert m.Item.select().where(m.Item.sow == sow).count() == len(made)
    # lists come in orderIndex order within each level
    for parent in made:
        level = operations.call_local("items.list", LOCAL, {"sowId": sow}, {"parentId": parent["id"]})
        assert [item["id"] for item in level] == [
            item["id"]
            for item in sorted(
                (item for item in made if item["parentItemId"] == parent["id"]),
                key=lambda item: (item["orderIndex"], item["createdAt"], item["id"]),
            )
        ]


@DB_SETTINGS
@given(
    size=st.integers(1, 6),
    picks=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 100)), min_size=1, max_size=8),
    spoil=st.sampled_from([None, "unknown", "duplicate"]),
    seed=st.integers(0, 10_000),
)
def test_reorder_is_all_or_nothing(sow, size, picks, spoil, seed):
    _reset(sow)
    ids = [
        operations.call_local(
            "items.create", LOCAL, {"sowId": sow}, body={"title": "t", "type": "task_item"}
        )["id"]
        for _ in range(size)
    ]
    entries = list({ids[i % size]: {"id": ids[i % size], "orderIndex": o} for i, o in picks}.values())
    if spoil == "unknown":
        entries.insert(random.Random(seed).randrange(len(entries) + 1), {"id": "ghost", "orderIndex": 1})
    elif spoil == "duplicate":
        entries.append({"id": entries[0]["id"], "orderIndex": 99})
    before = {item.id: item.order_index for item in m.Item.select()}
    if spoil is None:
        operations.call_local("items.reorder", LOCAL, {"sowId": sow}, body={"items": entries})
        after = {item.id: item.order_index for item in m.Item.select()}
        assert after == {**before, **{e["id"]: e["orderIndex"] for e in entries}}
    else:
        with pytest.raises(NotFound if spoil == "unknown" else InvalidInput):
            operations.call_local("items.reorder", LOCAL, {"sowId": sow}, body={"items": entries})
        assert {item.id: item.order_index for item in m.Item.select()} == before


def test_aggregation_is_linear_on_a_deep_chain():
    # A 20,000-deep chain would blow a recursive implementation's stack.
    depth = 20_000
    rows = [("r0", None, "requirement", "pending")]
    rows += [(f"t{i}", "r0" if i == 1 else f"t{i - 1}", "task_item", "completed") for i in range(1, depth)]
    shown = calculated_statuses(rows)
    assert shown["r0"] == "completed"
    assert Counter(shown.values()) == Counter({"completed": depth})
