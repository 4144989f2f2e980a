"""Ids a client sends that name nothing the caller may have, over HTTP (Group A).

An ``id`` in an item-create body is ignored like any field the call does not take (the
server generates the id); an ``itemId`` or ``parentId`` list filter naming no item the
caller can see is a 404, as an unknown ``sowId`` is, while an item with nothing under
it lists nothing.
"""

from __future__ import annotations

import pytest

from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.server_api import Api, assert_group_a_error, create_item


def other_org_item() -> str:
    return m.Item.get(m.Item.sow == "sow-b").id


def item_rows() -> list[tuple]:
    return list(m.Item.select(m.Item.id, m.Item.sow, m.Item.title).order_by(m.Item.id).tuples())


# --- an id in the item-create body ------------------------------------------------------------


@pytest.mark.parametrize("sent", ["zz", None, 5, "a/b", "", "@other"])
def test_an_id_in_the_create_body_is_ignored_and_the_server_generates_one(api: Api, sent) -> None:
    other = other_org_item()
    sent = other if sent == "@other" else sent
    before = item_rows()
    response = api.request(
        "POST", "/api/sow/sow-a/items", api.member, json={"title": "z", "type": "task_item", "id": sent}
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["id"] != sent and len(created["id"]) == 36
    assert (created["title"], created["sowId"], created["type"]) == ("z", "sow-a", "task_item")
    # Stored under the generated id only; another organization's item of the sent id untouched.
    assert item_rows() == sorted([*before, (created["id"], "sow-a", "z")])
    assert m.Item.select().where(m.Item.id == "zz").count() == 0
    assert m.Item.get_by_id(other).title == "Other org item"
    assert api.get(f"/api/items/{created['id']}", api.member).json() == created


def test_a_round_tripped_item_creates_a_copy(api: Api) -> None:
    """A client that sends back an object it read (id, sowId, status, timestamps) gets a
    new item, as from the service, not a 400."""
    original = create_item(api, "Frame")
    copy = api.request("POST", "/api/sow/sow-a/items", api.member, json={**original, "status": "completed"})
    assert copy.status_code == 201, copy.text
    assert copy.json()["id"] != original["id"] and copy.json()["status"] == "pending"
    assert m.Item.select().where(m.Item.title == "Frame").count() == 2


def test_the_create_body_s_other_fields_are_still_checked(api: Api) -> None:
    body = {"title": 5, "type": "task_item", "id": "zz"}
    response = api.request("POST", "/api/sow/sow-a/items", api.member, json=body)
    assert assert_group_a_error(response, 400) == "title: must be a string"
    assert m.Item.select().where(m.Item.sow == "sow-a").count() == 0


# --- dependencies filtered by itemId ----------------------------------------------------------


def test_deps_filtered_by_an_unknown_or_foreign_item_are_not_found(api: Api) -> None:
    other = other_org_item()
    for item_id, shown in (("nope", "nope"), (other, other), ("", "")):
        response = api.get(f"/api/dependencies?itemId={item_id}", api.member)
        assert assert_group_a_error(response, 404) == f"item {shown} not found"
    # the other organization's own token sees its item (with no dependencies)
    response = api.get(f"/api/dependencies?itemId={other}", api.other)
    assert response.status_code == 200 and response.json() == []
    assert response.headers["X-Total-Count"] == "0"


def test_deps_of_an_item_without_any_are_an_empty_list(api: Api) -> None:
    lone = create_item(api, "Lone")
    source, target = create_item(api, "Source"), create_item(api, "Target")
    dep = api.request(
        "POST",
        "/api/dependencies",
        api.member,
        json={
            "sourceItemId": source["id"],
            "targetItemId": target["id"],
            "dependencyType": "depends_on",
            "riskLevel": "low",
        },
    )
    assert dep.status_code == 201, dep.text
    response = api.get(f"/api/dependencies?itemId={lone['id']}", api.viewer)
    assert (response.status_code, response.json()) == (200, [])
    listed = api.get(f"/api/dependencies?itemId={source['id']}", api.viewer).json()
    assert [d["id"] for d in listed] == [dep.json()["id"]]
    # a page past the end of an item's dependencies is empty, not a 404
    past = api.get(f"/api/dependencies?itemId={source['id']}&page=5", api.viewer)
    assert (past.status_code, past.json(), past.headers["X-Total-Count"]) == (200, [], "1")
    # filtered out by status, the item still exists
    none = api.get(f"/api/dependencies?itemId={source['id']}&status=blocked", api.viewer)
    assert (none.status_code, none.json()) == (200, [])


# --- items filtered by parentId ---------------------------------------------------------------


def test_items_filtered_by_a_parent_not_in_the_sow_are_not_found(api: Api) -> None:
    other = other_org_item()
    for parent in ("nope", other, ""):
        response = api.get(f"/api/sow/sow-a/items?parentId={parent}", api.member)
        error = assert_group_a_error(response, 404)
        assert error == f"parent item {parent} not found in SOW sow-a"
    # create says the same of an unknown parent
    refused = api.request(
        "POST",
        "/api/sow/sow-a/items",
        api.member,
        json={"title": "x", "type": "task_item", "parentItemId": "nope"},
    )
    assert assert_group_a_error(refused, 404) == "parent item nope not found in SOW sow-a"
    # an unknown SOW is named first
    response = api.get("/api/sow/sow-nope/items?parentId=nope", api.member)
    assert assert_group_a_error(response, 404) == "SOW sow-nope not found"


def test_items_of_a_parent_without_children_are_an_empty_list(api: Api) -> None:
    parent = create_item(api, "Leaf")
    response = api.get(f"/api/sow/sow-a/items?parentId={parent['id']}", api.viewer)
    assert (response.status_code, response.json(), response.headers["X-Total-Count"]) == (200, [], "0")
    child = create_item(api, "Child", parentItemId=parent["id"])
    listed = api.get(f"/api/sow/sow-a/items?parentId={parent['id']}&type=requirement", api.viewer)
    assert (listed.status_code, listed.json()) == (200, [])
    listed = api.get(f"/api/sow/sow-a/items?parentId={parent['id']}", api.viewer)
    assert [item["id"] for item in listed.json()] == [child["id"]]
    past = api.get(f"/api/sow/sow-a/items?parentId={parent['id']}&page=3", api.viewer)
    assert (past.status_code, past.json(), past.headers["X-Total-Count"]) == (200, [], "1")


def test_an_item_of_another_sow_of_the_organization_is_no_parent_here(api: Api) -> None:
    from sowctl.schemas.items import ItemCreate
    from sowctl.schemas.sows import SowCreate
    from sowctl.services import items as item_service
    from sowctl.services import sows as sow_service
    from tests.support.server_api import PROJECT_A

    local = Caller.local()
    sow_service.create_sow(local, SowCreate(title="Phase 2", project_id=PROJECT_A, id="sow-a2"))
    elsewhere = item_service.create_item(local, "sow-a2", ItemCreate(title="There", type="requirement")).id
    response = api.get(f"/api/sow/sow-a/items?parentId={elsewhere}", api.member)
    assert assert_group_a_error(response, 404) == f"parent item {elsewhere} not found in SOW sow-a"
