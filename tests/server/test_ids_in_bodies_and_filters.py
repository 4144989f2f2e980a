"""Ids a client sends that name nothing the caller may have, over HTTP (Group A).

An ``id`` in an item-create body is ignored like any field the call does not take (the
server generates the id).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sowctl import models as m
from tests.server.test_server_api import Api, assert_group_a_error, create_item, make_api


@pytest.fixture
def api(migrated_db_url: str) -> Iterator[Api]:
    api = make_api(migrated_db_url)
    yield api
    api.client.close()
    m.database_proxy.obj.close()


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
