"""Items of a SOW, through the operation registry.

``operations.call_local`` runs the same validation and handler as the HTTP server,
so the bodies asserted here are the API's bodies (and the CLI's ``--json``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import Forbidden, HierarchyViolation, InvalidInput, NotFound
from sowctl.services.access import Caller
from sowctl.services.item_rules import aggregate_status
from sowctl.storage import models as m
from sowctl.storage import tallies

T0 = datetime(2026, 3, 16, 9, 30, 0)
TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
ITEM_FIELDS = {
    "id",
    "title",
    "description",
    "type",
    "sowId",
    "parentItemId",
    "orderIndex",
    "status",
    "createdAt",
    "updatedAt",
    "createdByUserId",
}
LOCAL = Caller.local()


def api(name: str, params=None, query=None, body=None, caller: Caller = LOCAL):
    return operations.call_local(name, caller, params, query, body)


def create(sow_id: str, title: str, type_: str = "task_item", parent: str | None = None, **extra) -> dict:
    body = {"title": title, "type": type_, **extra}
    if parent is not None:
        body["parentItemId"] = parent
    return api("items.create", {"sowId": sow_id}, body=body)


def set_status(item_id: str, status: str) -> dict:
    return api("items.update", {"itemId": item_id}, body={"status": status})


def snapshot() -> list[tuple]:
    """Every item row, to prove that a refused request changed nothing."""
    return list(
        m.Item.select(m.Item.id, m.Item.parent, m.Item.type, m.Item.title, m.Item.order_index, m.Item.status)
        .order_by(m.Item.id)
        .tuples()
    )


def make_org(org_id: str, sow_id: str) -> None:
    m.Organization.create(id=org_id, name=org_id)
    project = m.Project.create(id=f"p-{org_id}", organization=org_id, name="P", created_at=T0, updated_at=T0)
    m.Sow.create(key=sow_id, id=sow_id, organization=org_id, project=project, title="S", created_at=T0)


@pytest.fixture
def sow(db) -> str:
    """A fresh SOW "sow-1" of the default local organization, with the clock fixed."""
    clock.set_fixed_now(T0)
    api("sows.create", body={"title": "Phase 1", "id": "sow-1"})
    return "sow-1"


# --- create -------------------------------------------------------------------


def test_create_returns_the_api_shape(sow):
    item = create(sow, "Design", "requirement", description="The design")
    assert set(item) == ITEM_FIELDS
    assert item["title"] == "Design"
    assert item["description"] == "The design"
    assert item["type"] == "requirement"
    assert item["sowId"] == sow
    assert item["parentItemId"] is None
    assert item["orderIndex"] == 0
    assert item["status"] == "pending"
    assert item["createdByUserId"] == "local"
    assert item["createdAt"] == item["updatedAt"] == "2026-03-16T09:30:00Z"
    assert TIMESTAMP_RE.match(item["createdAt"])
    row = m.Item.get_by_id(item["id"])
    assert (row.sow_id, row.parent_id, row.status, row.type) == (sow, None, "pending", "requirement")


def test_create_ignores_a_status_in_the_body(sow):
    item = create(sow, "Task", status="completed")
    assert item["status"] == "pending"
    assert m.Item.get_by_id(item["id"]).status == "pending"


def test_full_rights_choose_an_item_id(sow):
    assert create(sow, "T", id="chosen")["id"] == "chosen"
    assert m.Item.get_by_id("chosen").title == "T"
    before = snapshot()
    with pytest.raises(InvalidInput) as info:
        create(sow, "again", id="chosen")
    assert info.value.message == "id: item chosen already exists"
    assert snapshot() == before


@pytest.mark.parametrize("sent", ["zz", None, 5, "a/b", "", "taken"])
def test_a_scoped_caller_s_id_is_ignored_like_an_unknown_field(sow, sent):
    """Item ids are one namespace across organizations: a caller scoped to one (every
    server request) never chooses one, whatever it sends, nor learns that one is taken."""
    make_org("org-x", "sow-x")
    taken = create("sow-x", "another organization's", id="taken")
    member = Caller(user_id="ada", organization_id="local", role="member")
    body = {"title": "T", "type": "task_item", "id": sent}
    item = api("items.create", {"sowId": sow}, body=body, caller=member)
    assert item["id"] != sent and len(item["id"]) == 36  # a generated uuid
    assert m.Item.get_by_id(item["id"]).title == "T"
    assert m.Item.select().where(m.Item.id == "zz").count() == 0
    assert m.Item.get_by_id("taken").title == taken["title"] == "another organization's"
    assert m.Item.select().count() == 2


def test_the_service_ignores_a_scoped_caller_s_id_too(sow):
    from sowctl.schemas.items import ItemCreate
    from sowctl.services import items as item_service

    member = Caller(user_id="ada", organization_id="local", role="member")
    item = item_service.create_item(member, sow, ItemCreate(title="T", type="task_item", id="zz"))
    assert item.id != "zz" and m.Item.select().where(m.Item.id == "zz").count() == 0


def test_create_records_the_calling_user(sow):
    member = Caller(user_id="ada", organization_id="local", role="member")
    item = api("items.create", {"sowId": sow}, body={"title": "T", "type": "task_item"}, caller=member)
    assert item["createdByUserId"] == "ada"
    assert m.Item.get_by_id(item["id"]).created_by_user_id == "ada"


def test_create_without_description_leaves_the_field_out(sow):
    item = create(sow, "T")
    assert "description" not in item and item["parentItemId"] is None  # the spec's null stays
    assert set(item) == ITEM_FIELDS - {"description"}


@pytest.mark.parametrize("order_index", [2.0, 2e0, 2])
def test_a_whole_json_number_is_an_order_index(sow, order_index):
    assert create(sow, "T", orderIndex=order_index)["orderIndex"] == 2


@pytest.mark.parametrize(
    ("parent_type", "child_type"),
    [("requirement", "requirement"), ("requirement", "task_item"), ("task_item", "task_item")],
)
def test_allowed_nesting(sow, parent_type, child_type):
    parent = create(sow, "parent", parent_type)
    child = create(sow, "child", child_type, parent=parent["id"])
    assert child["parentItemId"] == parent["id"]
    assert m.Item.get_by_id(child["id"]).parent_id == parent["id"]


def test_a_task_item_cannot_contain_a_requirement(sow):
    task = create(sow, "task")
    before = snapshot()
    with pytest.raises(HierarchyViolation) as info:
        create(sow, "req", "requirement", parent=task["id"])
    assert info.value.status == 400
    assert "a task item cannot contain a requirement" in info.value.message
    assert task["id"] in info.value.message
    assert [issue.path for issue in info.value.issues] == [("parentItemId",)]
    assert snapshot() == before


def test_a_nested_task_item_cannot_contain_a_requirement_either(sow):
    req = create(sow, "req", "requirement")
    task = create(sow, "task", parent=req["id"])
    sub = create(sow, "sub", parent=task["id"])
    with pytest.raises(HierarchyViolation):
        create(sow, "bad", "requirement", parent=sub["id"])


def test_unknown_parent_is_not_found(sow):
    before = snapshot()
    with pytest.raises(NotFound) as info:
        create(sow, "child", parent="nope")
    assert info.value.status == 404
    assert "nope" in info.value.message
    assert snapshot() == before


def test_parent_in_another_sow_is_not_found(sow):
    api("sows.create", body={"title": "Phase 2", "id": "sow-2"})
    elsewhere = create("sow-2", "req", "requirement")
    before = snapshot()
    with pytest.raises(NotFound):
        create(sow, "child", parent=elsewhere["id"])
    assert snapshot() == before


def test_create_in_an_unknown_sow_is_not_found(db):
    with pytest.raises(NotFound, match="SOW nope not found"):
        create("nope", "T")
    assert m.Item.select().count() == 0


def test_order_index_is_one_more_than_the_largest_sibling(sow):
    assert create(sow, "a")["orderIndex"] == 0
    assert create(sow, "b")["orderIndex"] == 1
    assert create(sow, "c", orderIndex=7)["orderIndex"] == 7
    assert create(sow, "d")["orderIndex"] == 8
    assert create(sow, "e", orderIndex=3)["orderIndex"] == 3
    assert create(sow, "f")["orderIndex"] == 9  # the largest, not the latest


def test_no_order_index_after_the_largest_one_is_refused(sow):
    create(sow, "last", orderIndex=2**31 - 1)
    before = snapshot()
    with pytest.raises(InvalidInput) as info:
        create(sow, "after it")  # 2**31 fits no INTEGER column (PostgreSQL refused it with a 500)
    assert info.value.message.startswith("orderIndex: must be given")
    assert snapshot() == before
    assert create(sow, "placed", orderIndex=5)["orderIndex"] == 5


def test_order_index_counts_only_siblings(sow):
    req = create(sow, "req", "requirement")  # 0
    create(sow, "top", orderIndex=5)
    assert create(sow, "first child", parent=req["id"])["orderIndex"] == 0
    assert create(sow, "second child", parent=req["id"])["orderIndex"] == 1
    assert create(sow, "next top")["orderIndex"] == 6
    api("sows.create", body={"title": "Other", "id": "sow-2"})
    assert create("sow-2", "other sow")["orderIndex"] == 0


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"type": "task_item"}, "title", "is required"),
        ({"title": "   ", "type": "task_item"}, "title", "must not be empty"),
        ({"title": 5, "type": "task_item"}, "title", "must be a string"),
        ({"title": "T"}, "type", "is required"),
        ({"title": "T", "type": "epic"}, "type", "must be one of: requirement, task_item"),
        ({"title": "T", "type": "task_item", "orderIndex": -1}, "orderIndex", "greater than or equal to 0"),
        ({"title": "T", "type": "task_item", "orderIndex": "2"}, "orderIndex", "must be an integer"),
        ({"title": "T", "type": "task_item", "orderIndex": 2.5}, "orderIndex", "must be an integer"),
        ({"title": "T", "type": "task_item", "orderIndex": None}, "orderIndex", "must not be null"),
        ({"title": "T", "type": "task_item", "description": None}, "description", "must not be null"),
        ({"title": None, "type": "task_item"}, "title", "must not be null"),
        ({"title": "T", "type": "task_item", "parentItemId": 3}, "parentItemId", "must be a string"),
        ({"title": "T", "type": "task_item", "description": 3}, "description", "must be a string"),
    ],
)
def test_create_validation_names_the_field(sow, body, field, message):
    with pytest.raises(InvalidInput) as info:
        api("items.create", {"sowId": sow}, body=body)
    assert info.value.status == 400
    assert [issue.path for issue in info.value.issues] == [(field,)]
    assert message in info.value.issues[0].message
    assert info.value.message.startswith(f"{field}: ")
    assert m.Item.select().count() == 0


@pytest.mark.parametrize("body", [None, [], "text"])
def test_create_needs_a_json_object(sow, body):
    with pytest.raises(InvalidInput):
        api("items.create", {"sowId": sow}, body=body)
    assert m.Item.select().count() == 0


# --- list and get -------------------------------------------------------------


def test_list_comes_in_order_index_order(sow):
    c = create(sow, "c", orderIndex=2)
    a = create(sow, "a", orderIndex=0)
    b = create(sow, "b", orderIndex=1)
    listed = api("items.list", {"sowId": sow})
    assert [item["id"] for item in listed] == [a["id"], b["id"], c["id"]]
    assert all(set(item) == ITEM_FIELDS - {"description"} for item in listed)


def test_list_filters_by_type_and_parent(sow):
    r1 = create(sow, "r1", "requirement")
    r2 = create(sow, "r2", "requirement")
    t1 = create(sow, "t1", parent=r1["id"])
    r11 = create(sow, "r11", "requirement", parent=r1["id"])
    t2 = create(sow, "t2", parent=r2["id"])
    top = create(sow, "top")

    def ids(**query):
        return [item["id"] for item in api("items.list", {"sowId": sow}, query)]

    assert sorted(ids(type="task_item")) == sorted([t1["id"], t2["id"], top["id"]])
    assert sorted(ids(type="requirement")) == sorted([r1["id"], r2["id"], r11["id"]])
    assert ids(parentId=r1["id"]) == [t1["id"], r11["id"]]
    assert ids(parentId=r1["id"], type="requirement") == [r11["id"]]
    assert ids(parentId=t1["id"]) == []  # an item of the SOW with no children


def test_list_by_a_parent_that_is_no_item_of_the_sow_is_not_found(sow):
    """Like an unknown SOW, and in create's words: a filter naming no item is a 404, not an
    empty list that looks like an item without children."""
    api("sows.create", body={"title": "Other", "id": "sow-2"})
    elsewhere = create("sow-2", "in sow-2")
    make_org("org-x", "sow-x")
    foreign = api("items.create", {"sowId": "sow-x"}, body={"title": "x", "type": "task_item"})
    for parent in ("nope", elsewhere["id"], foreign["id"], ""):
        with pytest.raises(NotFound) as info:
            api("items.list", {"sowId": sow}, {"parentId": parent})
        assert info.value.message == f"parent item {parent} not found in SOW {sow}"
        with pytest.raises(NotFound):
            api("items.list", {"sowId": sow}, {"parentId": parent, "type": "requirement"})
    # A caller of another organization is told about the SOW, never about the parent.
    member = Caller(user_id="u", organization_id="org-x", role="member")
    with pytest.raises(NotFound, match="SOW sow-1 not found"):
        api("items.list", {"sowId": sow}, {"parentId": "nope"}, caller=member)
    with pytest.raises(NotFound, match=f"parent item {elsewhere['id']} not found in SOW sow-x"):
        api("items.list", {"sowId": "sow-x"}, {"parentId": elsewhere["id"]}, caller=member)


def test_list_of_an_unknown_sow_is_not_found(db):
    with pytest.raises(NotFound, match="SOW nope not found"):
        api("items.list", {"sowId": "nope"})


def test_list_with_an_unknown_type_is_invalid(sow):
    with pytest.raises(InvalidInput) as info:
        api("items.list", {"sowId": sow}, {"type": "epic"})
    assert [issue.path for issue in info.value.issues] == [("type",)]


def test_get_returns_the_item(sow):
    item = create(sow, "T", description="d")
    assert api("items.get", {"itemId": item["id"]}) == item


def test_get_unknown_item_is_not_found(db):
    with pytest.raises(NotFound) as info:
        api("items.get", {"itemId": "nope"})
    assert info.value.message == "item nope not found"
    assert info.value.exit_code == 3


# --- update -------------------------------------------------------------------


def test_update_changes_the_sent_fields_and_refreshes_updated_at(sow):
    item = create(sow, "Old", description="keep me")
    clock.set_fixed_now(T0 + timedelta(minutes=5))
    updated = api("items.update", {"itemId": item["id"]}, body={"title": "New", "status": "in_progress"})
    assert updated == {
        **item,
        "title": "New",
        "status": "in_progress",
        "updatedAt": "2026-03-16T09:35:00Z",
    }
    row = m.Item.get_by_id(item["id"])
    assert (row.title, row.description, row.status) == ("New", "keep me", "in_progress")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"title": "T2"}, {"title": "T2"}),
        ({"description": "d2"}, {"description": "d2"}),
        ({"description": ""}, {"description": ""}),
        ({"status": "completed"}, {"status": "completed"}),
        ({"status": "cancelled"}, {"status": "cancelled"}),
        ({"orderIndex": 9}, {"orderIndex": 9}),
        ({}, {}),
    ],
)
def test_update_each_field(sow, body, expected):
    item = create(sow, "T", description="d")
    clock.set_fixed_now(T0 + timedelta(seconds=1))
    updated = api("items.update", {"itemId": item["id"]}, body=body)
    assert updated == {**item, **expected, "updatedAt": "2026-03-16T09:30:01Z"}
    assert api("items.get", {"itemId": item["id"]}) == updated


def test_type_and_parent_are_not_updatable(sow):
    req = create(sow, "req", "requirement")
    task = create(sow, "task")
    updated = api(
        "items.update",
        {"itemId": task["id"]},
        body={"type": "requirement", "parentItemId": req["id"], "sowId": "other"},
    )
    assert (updated["type"], updated["parentItemId"], updated["sowId"]) == ("task_item", None, sow)
    row = m.Item.get_by_id(task["id"])
    assert (row.type, row.parent_id, row.sow_id) == ("task_item", None, sow)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": None}, "title"),
        ({"title": ""}, "title"),
        ({"status": "done"}, "status"),
        ({"status": None}, "status"),
        ({"orderIndex": None}, "orderIndex"),
        ({"orderIndex": 1.5}, "orderIndex"),
        ({"orderIndex": -3}, "orderIndex"),
    ],
)
def test_refused_update_changes_nothing(sow, body, field):
    item = create(sow, "T")
    before = snapshot()
    with pytest.raises(InvalidInput) as info:
        api("items.update", {"itemId": item["id"]}, body=body)
    assert field in info.value.message
    assert snapshot() == before
    assert m.Item.get_by_id(item["id"]).updated_at == T0


def test_update_unknown_item_is_not_found(db):
    with pytest.raises(NotFound, match="item nope not found"):
        api("items.update", {"itemId": "nope"}, body={"title": "x"})


# --- delete -------------------------------------------------------------------


def dependency(source: str, target: str | None, **extra) -> m.Dependency:
    values = {
        "id": f"dep-{source[:8]}-{(target or 'ext')[:8]}",
        "sow": m.Item.get_by_id(source).sow_id,
        "source_item": source,
        "target_item": target,
        "dependency_type": "depends_on",
        "risk_level": "high",
        "status": "active",
        "created_at": T0,
    }
    values.update(extra)
    return m.Dependency.create(**values)


def test_delete_cascades_to_descendants_and_their_dependencies(sow):
    r1 = create(sow, "r1", "requirement")
    t1 = create(sow, "t1", parent=r1["id"])
    t1a = create(sow, "t1a", parent=t1["id"])
    r11 = create(sow, "r11", "requirement", parent=r1["id"])
    t11 = create(sow, "t11", parent=r11["id"])
    r2 = create(sow, "r2", "requirement")
    t2 = create(sow, "t2", parent=r2["id"])
    api("sows.create", body={"title": "Other", "id": "sow-2"})
    far = create("sow-2", "far")

    out_of_subtree = dependency(t1a["id"], t2["id"])  # source inside
    into_subtree = dependency(t2["id"], t11["id"])  # target inside
    across_sows = dependency(far["id"], t1["id"], sow="sow-2")
    inside = dependency(t1["id"], t11["id"])
    external = dependency(t1a["id"], None, is_external=True, external_target="Vendor API")
    kept = dependency(r2["id"], t2["id"], dependency_type="blocks")

    result = api("items.delete", {"itemId": r1["id"]})

    assert result == {"message": f"Item {r1['id']} deleted successfully"}
    remaining = {row.id for row in m.Item.select()}
    assert remaining == {r2["id"], t2["id"], far["id"]}
    deps = {row.id for row in m.Dependency.select()}
    assert deps == {kept.id}
    for gone in (out_of_subtree, into_subtree, across_sows, inside, external):
        assert gone.id not in deps
    with pytest.raises(NotFound):
        api("items.get", {"itemId": t11["id"]})


def test_delete_a_leaf_keeps_its_parent_and_siblings(sow):
    r = create(sow, "r", "requirement")
    a = create(sow, "a", parent=r["id"])
    b = create(sow, "b", parent=r["id"])
    api("items.delete", {"itemId": a["id"]})
    assert {row.id for row in m.Item.select()} == {r["id"], b["id"]}


def test_delete_unknown_item_is_not_found(sow):
    create(sow, "T")
    before = snapshot()
    with pytest.raises(NotFound, match="item nope not found"):
        api("items.delete", {"itemId": "nope"})
    assert snapshot() == before


# --- reorder ------------------------------------------------------------------


def order_of(*ids: str) -> list[int]:
    return [m.Item.get_by_id(item_id).order_index for item_id in ids]


def test_reorder_sets_every_order_index(sow):
    a, b, c = create(sow, "a"), create(sow, "b"), create(sow, "c")
    body = {"items": [{"id": c["id"], "orderIndex": 0}, {"id": a["id"], "orderIndex": 2}]}
    result = api("items.reorder", {"sowId": sow}, body=body)
    assert result == {"message": "Items reordered successfully", "items": body["items"]}
    assert order_of(a["id"], b["id"], c["id"]) == [2, 1, 0]
    assert [item["id"] for item in api("items.list", {"sowId": sow})] == [c["id"], b["id"], a["id"]]


@pytest.mark.parametrize(
    ("bad_entry", "error"),
    [
        ({"id": "nope", "orderIndex": 5}, NotFound),
        ({"id": "@a", "orderIndex": 5}, InvalidInput),  # listed twice
        ({"id": "@other", "orderIndex": 5}, NotFound),  # an item of another SOW
        ({"id": "@b", "orderIndex": -1}, InvalidInput),
        ({"id": "@b"}, InvalidInput),
        ({"orderIndex": 1}, InvalidInput),
    ],
)
def test_reorder_is_all_or_nothing(sow, bad_entry, error):
    a, b = create(sow, "a"), create(sow, "b")
    api("sows.create", body={"title": "Other", "id": "sow-2"})
    other = create("sow-2", "other")
    names = {"@a": a["id"], "@b": b["id"], "@other": other["id"]}
    bad = {k: names.get(v, v) if k == "id" else v for k, v in bad_entry.items()}
    before = snapshot()
    body = {"items": [{"id": a["id"], "orderIndex": 9}, {"id": b["id"], "orderIndex": 8}, bad]}
    with pytest.raises(error):
        api("items.reorder", {"sowId": sow}, body=body)
    assert snapshot() == before


@pytest.mark.parametrize("body", [{}, {"items": []}, {"items": "x"}])
def test_reorder_needs_items(sow, body):
    with pytest.raises(InvalidInput) as info:
        api("items.reorder", {"sowId": sow}, body=body)
    assert info.value.issues[0].path[0] == "items"


def test_reorder_in_an_unknown_sow_is_not_found(db):
    with pytest.raises(NotFound):
        api("items.reorder", {"sowId": "nope"}, body={"items": [{"id": "x", "orderIndex": 0}]})


# --- status aggregation ---------------------------------------------------------


@pytest.mark.parametrize(
    ("own", "children", "expected"),
    [
        ("pending", [], "pending"),
        ("completed", [], "completed"),  # no task items: its own stored status
        ("in_progress", [], "in_progress"),
        ("pending", ["cancelled"], "cancelled"),
        ("pending", ["cancelled", "cancelled"], "cancelled"),
        ("pending", ["completed"], "completed"),
        ("pending", ["completed", "cancelled"], "completed"),
        ("completed", ["pending"], "pending"),
        ("pending", ["pending", "cancelled"], "pending"),
        ("pending", ["pending", "completed"], "in_progress"),
        ("pending", ["in_progress"], "in_progress"),
        ("pending", ["in_progress", "cancelled"], "in_progress"),
        ("cancelled", ["completed", "completed", "pending"], "in_progress"),
    ],
)
def test_aggregate_status_rule(own, children, expected):
    below = [children.count(status) for status in tallies.STATUSES]
    assert aggregate_status(own, below) == expected


def test_requirement_status_counts_every_descendant_task_item(sow):
    r = create(sow, "r", "requirement")
    t = create(sow, "t", parent=r["id"])
    sub = create(sow, "sub", parent=t["id"])
    nested = create(sow, "nested", "requirement", parent=r["id"])
    deep = create(sow, "deep", parent=nested["id"])

    def shown(item):
        return api("items.get", {"itemId": item["id"]})["status"]

    assert shown(r) == "pending"
    set_status(t["id"], "completed")
    set_status(sub["id"], "completed")
    assert shown(r) == "in_progress"  # deep is still pending
    set_status(deep["id"], "completed")
    assert shown(r) == "completed"
    assert shown(nested) == "completed"
    set_status(sub["id"], "cancelled")
    assert shown(r) == "completed"  # cancelled ones are ignored
    for task in (t, sub, deep):
        set_status(task["id"], "cancelled")
    assert shown(r) == "cancelled"
    assert shown(nested) == "cancelled"


def test_a_requirement_without_task_items_shows_its_own_status(sow):
    r = create(sow, "r", "requirement")
    create(sow, "empty", "requirement", parent=r["id"])
    assert set_status(r["id"], "in_progress")["status"] == "in_progress"
    assert api("items.get", {"itemId": r["id"]})["status"] == "in_progress"


def test_every_response_showing_a_requirement_shows_the_calculated_status(sow):
    r = create(sow, "r", "requirement")
    t = create(sow, "t", parent=r["id"])
    set_status(t["id"], "completed")
    # update: the stored status says pending, the task items say completed
    assert set_status(r["id"], "pending")["status"] == "completed"
    assert api("items.update", {"itemId": r["id"]}, body={"title": "R"})["status"] == "completed"
    assert api("items.get", {"itemId": r["id"]})["status"] == "completed"
    by_id = {item["id"]: item for item in api("items.list", {"sowId": sow})}
    assert by_id[r["id"]]["status"] == "completed"
    only = api("items.list", {"sowId": sow}, {"type": "requirement"})
    assert [item["status"] for item in only] == ["completed"]
    # the stored value is untouched: remove the task item and it shows again
    assert m.Item.get_by_id(r["id"]).status == "pending"
    api("items.delete", {"itemId": t["id"]})
    assert api("items.get", {"itemId": r["id"]})["status"] == "pending"


# --- who may see and change items -------------------------------------------------


@pytest.fixture
def foreign(sow) -> dict:
    """An item of another organization's SOW."""
    make_org("org-2", "sow-x")
    return create("sow-x", "theirs")


MEMBER = Caller(user_id="u1", organization_id="local", role="member")
VIEWER = Caller(user_id="v1", organization_id="local", role="viewer")


@pytest.mark.parametrize(
    ("name", "params", "body"),
    [
        ("items.get", {"itemId": "@item"}, None),
        ("items.update", {"itemId": "@item"}, {"title": "mine"}),
        ("items.delete", {"itemId": "@item"}, None),
        ("items.list", {"sowId": "sow-x"}, None),
        ("items.create", {"sowId": "sow-x"}, {"title": "T", "type": "task_item"}),
        ("items.reorder", {"sowId": "sow-x"}, {"items": [{"id": "@item", "orderIndex": 3}]}),
    ],
)
def test_another_organizations_items_do_not_exist(foreign, name, params, body):
    params = {k: foreign["id"] if v == "@item" else v for k, v in params.items()}
    if body and "items" in body:
        body = {"items": [{"id": foreign["id"], "orderIndex": 3}]}
    before = snapshot()
    with pytest.raises(NotFound):
        api(name, params, body=body, caller=MEMBER)
    assert snapshot() == before


def test_a_parent_of_another_organization_does_not_exist(foreign):
    with pytest.raises(NotFound):
        api(
            "items.create",
            {"sowId": "sow-1"},
            body={"title": "T", "type": "task_item", "parentItemId": foreign["id"]},
            caller=MEMBER,
        )


@pytest.mark.parametrize(
    ("name", "params", "body"),
    [
        ("items.create", {"sowId": "sow-1"}, {"title": "T", "type": "task_item"}),
        ("items.update", {"itemId": "@item"}, {"title": "x"}),
        ("items.delete", {"itemId": "@item"}, None),
        ("items.reorder", {"sowId": "sow-1"}, {"items": [{"id": "@item", "orderIndex": 3}]}),
    ],
)
def test_a_viewer_cannot_write(sow, name, params, body):
    item = create(sow, "T")
    params = {k: item["id"] if v == "@item" else v for k, v in params.items()}
    if body and "items" in body:
        body = {"items": [{"id": item["id"], "orderIndex": 3}]}
    before = snapshot()
    with pytest.raises(Forbidden) as info:
        api(name, params, body=body, caller=VIEWER)
    assert info.value.status == 403
    assert snapshot() == before


def test_a_viewer_can_read(sow):
    item = create(sow, "T")
    assert api("items.get", {"itemId": item["id"]}, caller=VIEWER) == item
    assert api("items.list", {"sowId": sow}, caller=VIEWER) == [item]


# --- paging (the server's lists) ------------------------------------------------------


def test_list_pages_keep_order_total_and_calculated_statuses(sow):
    from sowctl.services import items as service

    r = create(sow, "r", "requirement", orderIndex=0)
    made = [create(sow, f"t{n}", parent=r["id"], orderIndex=n + 1) for n in range(4)]
    for item in made:
        set_status(item["id"], "completed")
    page, total = service.list_items(LOCAL, sow, offset=0, limit=1)
    assert total == 5
    assert [(i.id, i.status) for i in page] == [(r["id"], "completed")]  # its tasks are on other pages
    page, total = service.list_items(LOCAL, sow, offset=2, limit=2)
    assert total == 5
    assert [i.id for i in page] == [made[1]["id"], made[2]["id"]]
    page, total = service.list_items(LOCAL, sow, offset=4)
    assert ([i.id for i in page], total) == ([made[3]["id"]], 5)
    page, total = service.list_items(LOCAL, sow, item_type="requirement", offset=0, limit=10)
    assert ([i.id for i in page], total) == ([r["id"]], 1)
