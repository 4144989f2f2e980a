"""``GET /api/sows`` is paged like Group A's other lists: ``page`` (default 1), ``limit``
(default 20, larger than 100 clamped to 100), a plain array, ``X-Total-Count`` and ``Link``."""

from __future__ import annotations

import httpx
import pytest

from sowctl.foundation import clock
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import items as item_service
from sowctl.services import sows as sow_service
from sowctl.storage import models as m
from tests.support.server_api import LOCAL, PROJECT_A, PROJECT_B, Api, assert_group_a_error


def add_sows(count: int, *, start: int = 0, project_id: str = PROJECT_A, prefix: str = "sow-x") -> list[str]:
    ids = [f"{prefix}{index:03}" for index in range(start, start + count)]
    for sow_id in ids:
        sow_service.create_sow(LOCAL, SowCreate(title=f"title {sow_id}", project_id=project_id, id=sow_id))
    return ids


def links(response: httpx.Response) -> dict[str, httpx.URL]:
    return {rel: httpx.URL(link["url"]) for rel, link in response.links.items()}


@pytest.fixture
def many(api: Api) -> tuple[Api, list[str]]:
    """Org-a holds sow-a (the fixture's) and 25 more; org-b holds sow-b and 30 more. Ids grow with
    creation, so id order (the tie-break within a second) is creation order."""
    ids = ["sow-a", *add_sows(25)]
    add_sows(30, project_id=PROJECT_B, prefix="b-")
    return api, ids


def test_first_page_has_the_default_limit_total_and_next_link(many) -> None:
    api, ids = many
    response = api.get("/api/sows", api.member)
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, list) and [sow["id"] for sow in body] == ids[:20]
    assert response.headers["x-total-count"] == "26"  # org-b's 31 are neither listed nor counted
    rels = links(response)
    assert "prev" not in rels
    assert rels["next"].path == "/api/sows"
    assert (rels["next"].params["page"], rels["next"].params["limit"]) == ("2", "20")
    assert rels["last"].params["page"] == "2"


def test_following_next_lists_every_sow_once(many) -> None:
    api, ids = many
    auth = {"Authorization": f"Bearer {api.member}"}
    first = api.get("/api/sows?limit=10", api.member)
    second = api.client.get(links(first)["next"], headers=auth)
    third = api.client.get(links(second)["next"], headers=auth)
    assert [sow["id"] for page in (first, second, third) for sow in page.json()] == ids
    assert [len(page.json()) for page in (first, second, third)] == [10, 10, 6]
    assert "next" not in links(third)
    assert links(third)["prev"].params["page"] == "2"
    assert {page.headers["x-total-count"] for page in (first, second, third)} == {"26"}


def test_a_page_carries_its_own_sows_item_counts(many) -> None:
    api, ids = many
    for title in ("a", "b", "c"):
        item_service.create_item(LOCAL, ids[22], ItemCreate(title=title, type="task_item"))
    item_service.create_item(LOCAL, ids[1], ItemCreate(title="x", type="task_item"))
    page = api.get("/api/sows?page=2", api.member).json()
    assert [(sow["id"], sow["itemCount"]) for sow in page] == [(sow_id, 0) for sow_id in ids[20:22]] + [
        (ids[22], 3),
        *((sow_id, 0) for sow_id in ids[23:]),
    ]
    assert api.get("/api/sows?limit=2", api.member).json()[1]["itemCount"] == 1


def test_limit_above_100_is_clamped_to_100(many) -> None:
    api, ids = many
    ids += add_sows(110, start=25)
    response = api.get("/api/sows?limit=1000", api.member)
    assert response.status_code == 200
    assert [sow["id"] for sow in response.json()] == ids[:100]
    assert response.headers["x-total-count"] == str(len(ids)) == "136"
    assert links(response)["next"].params["limit"] == "100"
    rest = api.get("/api/sows?limit=1000&page=2", api.member).json()
    assert [sow["id"] for sow in rest] == ids[100:]


def test_the_project_filter_is_counted_and_kept_in_the_links(many) -> None:
    api, _ = many
    now = clock.now()
    m.Project.create(id="p-2", organization="org-a", name="Two", created_at=now, updated_at=now)
    second = add_sows(3, start=500, project_id="p-2")
    response = api.get("/api/sows?projectId=p-2&limit=2", api.member)
    assert [sow["id"] for sow in response.json()] == second[:2]
    assert response.headers["x-total-count"] == "3"
    assert links(response)["next"].params["projectId"] == "p-2"
    assert api.get("/api/sows", api.member).headers["x-total-count"] == "29"


def test_page_past_the_end_is_empty_with_the_total(many) -> None:
    api, _ = many
    response = api.get("/api/sows?page=9", api.member)
    assert response.status_code == 200 and response.json() == []
    assert response.headers["x-total-count"] == "26"


def test_an_organization_with_no_sows_lists_none(api: Api) -> None:
    m.Sow.delete().where(m.Sow.organization == "org-a").execute()
    response = api.get("/api/sows", api.member)
    assert response.status_code == 200 and response.json() == []
    assert response.headers["x-total-count"] == "0"
    assert "next" not in links(response)


@pytest.mark.parametrize(("query", "name"), [("page=0", "page"), ("limit=0", "limit"), ("limit=x", "limit")])
def test_bad_page_or_limit_is_400_naming_it(api: Api, query: str, name: str) -> None:
    error = assert_group_a_error(api.get(f"/api/sows?{query}", api.member), 400)
    assert error.startswith(name + ":")


def test_openapi_documents_the_paging(api: Api) -> None:
    operation = api.client.get("/openapi.json").json()["paths"]["/api/sows"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"projectId", "page", "limit"} <= names
    assert {"X-Total-Count", "Link"} <= set(operation["responses"]["200"]["headers"])
