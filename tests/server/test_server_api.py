"""The HTTP server in process: routes, auth, validation, paging and every error envelope.

The Bottle app is driven through ``httpx.WSGITransport`` (no socket). Each test gets
a fresh database with two organizations (org-a, org-b), a SOW in each, and tokens
of every role.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Iterator
from datetime import datetime

import bottle
import httpx
import peewee as pw
import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import NotFound
from sowctl.operations import Operation, Result
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.server.configuration import MIB, ServerSettings
from sowctl.server.http import link_header, request_origin
from sowctl.services import credentials
from sowctl.services import items as item_service
from sowctl.services import sows as sow_service
from sowctl.storage import models as m
from tests.support.server_api import (
    LOCAL,
    PROJECT_A,
    PROJECT_B,
    Api,
    assert_group_a_error,
    assert_group_c_error,
    create_item,
    make_api,
)

# --- health and success paths -----------------------------------------------------------


def test_healthz_needs_no_token(api: Api) -> None:
    response = api.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["content-type"] == "application/json"


def test_every_response_carries_a_request_id(api: Api) -> None:
    ids = {api.get("/healthz").headers["x-request-id"], api.get("/nowhere").headers["x-request-id"]}
    assert len(ids) == 2


def test_item_lifecycle_over_http(api: Api) -> None:
    created = create_item(api, "Pour slab", description="Level 1")
    assert created["sowId"] == "sow-a" and created["status"] == "pending"
    assert created["parentItemId"] is None and created["orderIndex"] == 0
    item_id = created["id"]

    fetched = api.get(f"/api/items/{item_id}", api.viewer)
    assert fetched.status_code == 200 and fetched.json() == created

    updated = api.request("PUT", f"/api/items/{item_id}", api.member, json={"status": "in_progress"})
    assert updated.status_code == 200 and updated.json()["status"] == "in_progress"

    second = create_item(api, "Cure slab")
    reordered = api.request(
        "PUT",
        "/api/sow/sow-a/items/reorder",
        api.member,
        json={"items": [{"id": second["id"], "orderIndex": 0}, {"id": item_id, "orderIndex": 1}]},
    )
    assert reordered.status_code == 200, reordered.text
    assert reordered.json()["items"] == [
        {"id": second["id"], "orderIndex": 0},
        {"id": item_id, "orderIndex": 1},
    ]
    listed = api.get("/api/sow/sow-a/items", api.member)
    assert [item["id"] for item in listed.json()] == [second["id"], item_id]

    deleted = api.request("DELETE", f"/api/items/{item_id}", api.member)
    assert deleted.status_code == 200 and isinstance(deleted.json()["message"], str)
    assert_group_a_error(api.get(f"/api/items/{item_id}", api.member), 404, item_id)


def test_a_body_is_read_by_the_api_s_field_names_only(api: Api) -> None:
    """``order_index`` is not the API's name for ``orderIndex``: ignored like any unknown
    field, never applied (and never chosen over the real name when both are sent)."""
    first = create_item(api, "First")
    second = create_item(api, "Second", order_index=7, parent_item_id=first["id"])
    assert second["orderIndex"] == 1 and second["parentItemId"] is None
    both = api.request(
        "PUT", f"/api/items/{second['id']}", api.member, json={"orderIndex": 5, "order_index": 9}
    )
    assert both.status_code == 200 and both.json()["orderIndex"] == 5
    assert api.get(f"/api/items/{second['id']}", api.member).json()["orderIndex"] == 5


def test_sow_routes(api: Api) -> None:
    created = api.request("POST", "/api/sows", api.member, json={"title": "Phase 2", "projectId": PROJECT_A})
    assert created.status_code == 201, created.text
    assert created.json()["projectId"] == PROJECT_A
    listed = api.get("/api/sows", api.member).json()
    assert {sow["id"] for sow in listed} == {"sow-a", created.json()["id"]}  # not org-b's
    assert_group_a_error(api.request("POST", "/api/sows", api.member, json={}), 400, "title")
    assert_group_a_error(api.request("POST", "/api/sows", api.viewer, json={"title": "x"}), 403)
    assert_group_a_error(
        api.request("POST", "/api/sows", api.member, json={"title": "x", "projectId": PROJECT_B}), 404
    )


def test_head_on_a_get_route(api: Api) -> None:
    response = api.request("HEAD", "/api/sow/sow-a/items", api.member)
    assert response.status_code == 200 and response.content == b""


# --- authentication and visibility --------------------------------------------------------

PROTECTED = [
    ("GET", "/api/sow/sow-a/items", None),
    ("GET", "/api/items/some-item", None),
    ("POST", "/api/sow/sow-a/items", {"title": "x", "type": "task_item"}),
    ("PUT", "/api/items/some-item", {"title": "y"}),
    ("DELETE", "/api/items/some-item", None),
    ("PUT", "/api/sow/sow-a/items/reorder", {"items": [{"id": "x", "orderIndex": 0}]}),
    ("GET", "/api/sows", None),
    ("POST", "/api/sows", {"title": "x"}),
]


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED)
@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (None, "missing bearer token"),
        ("Bearer", "must be 'Bearer <token>'"),
        ("Basic dXNlcjpwYXNz", "must be 'Bearer <token>'"),
        ("Bearer sowt_not-a-real-token", "invalid bearer token"),
    ],
)
def test_missing_or_invalid_token_is_401(api: Api, method, path, body, authorization, message) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = api.client.request(method, path, json=body, headers=headers)
    assert_group_a_error(response, 401, message)
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_revoked_token_is_refused_at_once(api: Api) -> None:
    assert_group_a_error(api.get("/api/sow/sow-a/items", api.revoked), 401, "revoked")


def test_bearer_scheme_is_case_insensitive(api: Api) -> None:
    response = api.client.get("/api/sow/sow-a/items", headers={"Authorization": f"bearer {api.member}"})
    assert response.status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), [case for case in PROTECTED if case[0] != "GET"])
def test_viewer_cannot_write(api: Api, method, path, body) -> None:
    assert_group_a_error(api.request(method, path, api.viewer, json=body), 403, "viewer")


def test_viewer_can_read(api: Api) -> None:
    item = create_item(api)
    assert api.get("/api/sow/sow-a/items", api.viewer).status_code == 200
    assert api.get(f"/api/items/{item['id']}", api.viewer).status_code == 200


def test_admin_can_write(api: Api) -> None:
    response = api.request(
        "POST", "/api/sow/sow-a/items", api.admin, json={"title": "x", "type": "requirement"}
    )
    assert response.status_code == 201


def test_another_organizations_records_are_not_found(api: Api) -> None:
    item = create_item(api)
    item_id = item["id"]
    other_item = m.Item.get(m.Item.sow == "sow-b").id
    cases = [
        ("GET", "/api/sow/sow-a/items", None),
        ("POST", "/api/sow/sow-a/items", {"title": "x", "type": "task_item"}),
        ("PUT", "/api/sow/sow-a/items/reorder", {"items": [{"id": item_id, "orderIndex": 3}]}),
        ("GET", f"/api/items/{item_id}", None),
        ("PUT", f"/api/items/{item_id}", {"title": "hijacked"}),
        ("DELETE", f"/api/items/{item_id}", None),
    ]
    for method, path, body in cases:
        assert_group_a_error(api.request(method, path, api.other, json=body), 404, "not found")
    # ...exactly like records that do not exist at all
    assert_group_a_error(api.get("/api/sow/sow-nope/items", api.member), 404, "sow-nope")
    assert_group_a_error(api.get(f"/api/items/{other_item}", api.member), 404, other_item)
    assert api.get(f"/api/items/{item_id}", api.member).json()["title"] == "Frame"


# --- request bodies ------------------------------------------------------------------------


def post_raw(api: Api, content: bytes, content_type: str | None = "application/json") -> httpx.Response:
    headers = {"Authorization": f"Bearer {api.member}"}
    if content_type:
        headers["Content-Type"] = content_type
    return api.client.post("/api/sow/sow-a/items", content=content, headers=headers)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"title": "x", "type": ', "malformed JSON"),
        (b"{'title': 'x'}", "malformed JSON"),
        (b'{"title": "a", "title": "b", "type": "task_item"}', "duplicated key 'title'"),
        (b'{"title": "x", "type": "task_item", "orderIndex": NaN}', "malformed JSON"),
        (b'{"title": "caf\xe9", "type": "task_item"}', "not valid UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 64 levels deep (line 1, column 65)"),
        (b"", "request body is required"),
        (b"null", "request body is required"),
        (b'["title"]', "must be a JSON object"),
        (b'"text"', "must be a JSON object"),
    ],
)
def test_malformed_bodies_are_400(api: Api, content: bytes, message: str) -> None:
    assert_group_a_error(post_raw(api, content), 400, message)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"type": "task_item"}, "title", "is required"),
        ({"title": "x"}, "type", "is required"),
        ({"title": 5, "type": "task_item"}, "title", "must be a string"),
        ({"title": "x", "type": "epic"}, "type", "must be one of"),
        ({"title": "x", "type": "task_item", "orderIndex": "3"}, "orderIndex", "must be an integer"),
        ({"title": "x", "type": "task_item", "orderIndex": -1}, "orderIndex", ""),
        ({"title": "   ", "type": "task_item"}, "title", "must not be empty"),
    ],
)
def test_invalid_fields_are_400_naming_the_field(api: Api, body: dict, field: str, message: str) -> None:
    error = assert_group_a_error(api.request("POST", "/api/sow/sow-a/items", api.member, json=body), 400)
    assert field in error and message in error


@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_too_long_for_python_is_a_400_naming_the_field(api: Api, sign: str) -> None:
    # Valid JSON: only the field is wrong, and the answer must not speak Python.
    content = b'{"title": "x", "type": "task_item", "orderIndex": ' + sign.encode() + b"9" * 5000 + b"}"
    error = assert_group_a_error(post_raw(api, content), 400)
    assert error == "orderIndex: must be a number of at most 4300 digits (this one has 5000)"
    reorder = b'{"items": [{"id": "i", "orderIndex": ' + b"1" * 4301 + b"}]}"
    response = api.client.put(
        "/api/sow/sow-a/items/reorder",
        content=reorder,
        headers={"Authorization": f"Bearer {api.member}", "Content-Type": "application/json"},
    )
    assert assert_group_a_error(response, 400).startswith("items.0.orderIndex: must be a number of at most")


def test_update_with_wrong_types(api: Api) -> None:
    item = create_item(api)
    response = api.request("PUT", f"/api/items/{item['id']}", api.member, json={"status": "done"})
    assert_group_a_error(response, 400, "status")
    response = api.request("PUT", "/api/sow/sow-a/items/reorder", api.member, json={"items": "all"})
    assert_group_a_error(response, 400, "items")


def test_non_json_content_type_is_400(api: Api) -> None:
    # No group's table lists 415: a body that is not JSON is an invalid request.
    response = post_raw(api, b"title=x&type=task_item", "application/x-www-form-urlencoded")
    assert_group_a_error(response, 400, "must be JSON")


def test_json_without_content_type_and_with_charset_are_accepted(api: Api) -> None:
    body = json.dumps({"title": "x", "type": "task_item"}).encode()
    assert post_raw(api, body, None).status_code == 201
    assert post_raw(api, body, "application/json; charset=utf-8").status_code == 201


def test_body_over_1_mib_is_413(api: Api) -> None:
    big = json.dumps({"title": "x", "type": "task_item", "description": "a" * MIB}).encode()
    assert_group_a_error(post_raw(api, big), 413, "too large")
    # announced too large: refused before it is read, whatever the route or the token
    response = api.client.post("/api/sow/sow-a/items", content=big)
    assert_group_a_error(response, 413)


def test_streamed_body_over_the_limit_is_413(api: Api) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"title": "x", "type": "task_item", "description": "'
        for _ in range(17):
            yield b"a" * 65536
        yield b'"}'

    response = api.client.post(
        "/api/sow/sow-a/items",
        content=chunks(),
        headers={"Authorization": f"Bearer {api.member}", "Content-Type": "application/json"},
    )
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert_group_a_error(response, 413, "too large")


def test_streamed_body_under_the_limit_is_read(api: Api) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"title": "streamed",'
        yield b' "type": "task_item"}'

    response = api.client.post(
        "/api/sow/sow-a/items",
        content=chunks(),
        headers={"Authorization": f"Bearer {api.member}", "Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text


def test_body_just_under_the_limit_is_accepted(db_url: str) -> None:
    api = make_api(db_url, ServerSettings(max_body_bytes=200))
    body = json.dumps({"title": "x", "type": "task_item", "description": "d" * 120}).encode()
    assert len(body) <= 200
    assert post_raw(api, body).status_code == 201
    too_big = json.dumps({"title": "x", "type": "task_item", "description": "d" * 200}).encode()
    assert_group_a_error(post_raw(api, too_big), 413, "200 bytes")


# --- query strings and pagination ------------------------------------------------------------


def test_query_filters_are_validated(api: Api) -> None:
    assert_group_a_error(api.get("/api/sow/sow-a/items?type=epic", api.member), 400, "type")
    assert api.get("/api/sow/sow-a/items?type=task_item", api.member).status_code == 200


def test_repeated_query_parameter_is_400(api: Api) -> None:
    response = api.get("/api/sow/sow-a/items?type=task_item&type=requirement", api.member)
    assert_group_a_error(response, 400, "type is given more than once")


def test_non_utf8_query_is_400(api: Api) -> None:
    assert_group_a_error(api.get("/api/sow/sow-a/items?type=%E9", api.member), 400, "UTF-8")


@pytest.fixture
def many(api: Api) -> Api:
    for index in range(25):
        item_service.create_item(LOCAL, "sow-a", ItemCreate(title=f"item {index:02}", type="task_item"))
    return api


def links(response: httpx.Response) -> dict[str, httpx.URL]:
    return {rel: httpx.URL(link["url"]) for rel, link in response.links.items()}


def test_first_page_has_default_limit_and_next_link(many: Api) -> None:
    response = many.get("/api/sow/sow-a/items", many.member)
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, list) and len(body) == 20
    assert [item["title"] for item in body] == [f"item {i:02}" for i in range(20)]
    assert response.headers["x-total-count"] == "25"
    rels = links(response)
    assert "prev" not in rels
    assert rels["next"].params["page"] == "2" and rels["next"].params["limit"] == "20"
    assert rels["next"].path == "/api/sow/sow-a/items"
    assert str(rels["next"]).startswith("http://test/")


def test_following_next_reaches_the_last_page(many: Api) -> None:
    first = many.get("/api/sow/sow-a/items?type=task_item&limit=10", many.member)
    second = many.client.get(links(first)["next"], headers={"Authorization": f"Bearer {many.member}"})
    third = many.client.get(links(second)["next"], headers={"Authorization": f"Bearer {many.member}"})
    titles = [item["title"] for page in (first, second, third) for item in page.json()]
    assert titles == [f"item {i:02}" for i in range(25)]
    assert links(second)["next"].params["type"] == "task_item"  # the rest of the query is kept
    assert "next" not in links(third)
    assert links(third)["prev"].params["page"] == "2"
    assert links(third)["last"].params["page"] == "3"


def test_limit_above_100_is_clamped(many: Api) -> None:
    for index in range(25, 130):
        item_service.create_item(LOCAL, "sow-a", ItemCreate(title=f"item {index:03}", type="task_item"))
    response = many.get("/api/sow/sow-a/items?limit=1000", many.member)
    assert len(response.json()) == 100
    assert response.headers["x-total-count"] == "130"
    assert links(response)["next"].params["limit"] == "100"


def test_page_past_the_end_is_empty(many: Api) -> None:
    response = many.get("/api/sow/sow-a/items?page=9", many.member)
    assert response.status_code == 200 and response.json() == []
    assert response.headers["x-total-count"] == "25"


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=abc", "page"),
        ("page=1.5", "page"),
        ("page=", "page"),
        ("page=99999999999999999999999", "page"),
        ("limit=0", "limit"),
        ("limit=ten", "limit"),
        ("limit=%C2%B2", "limit"),
    ],
)
def test_bad_page_or_limit_is_400_naming_it(many: Api, query: str, name: str) -> None:
    error = assert_group_a_error(many.get(f"/api/sow/sow-a/items?{query}", many.member), 400)
    assert error.startswith(name + ":")


def test_link_header_quotes_the_path(api: Api) -> None:
    sow_service.create_sow(LOCAL, SowCreate(title="Spaced", project_id=PROJECT_A, id="sow a&b"))
    for index in range(3):
        item_service.create_item(LOCAL, "sow a&b", ItemCreate(title=f"i{index}", type="task_item"))
    response = api.get("/api/sow/sow%20a%26b/items?limit=2", api.member)
    assert response.status_code == 200 and len(response.json()) == 2
    assert "/api/sow/sow%20a&b/items?" in response.headers["link"]
    assert links(response)["next"].path == "/api/sow/sow a&b/items"


@pytest.mark.parametrize(
    "headers",
    [{"Host": 'evil.com">; rel="x'}, {"X-Forwarded-Proto": "javascript"}, {"Host": "a b"}],
)
def test_a_forged_host_or_scheme_gives_relative_links_not_another_url(many: Api, headers: dict) -> None:
    response = many.get("/api/sow/sow-a/items", many.member, headers=headers)
    assert response.status_code == 200
    link = response.headers["link"]
    assert link.startswith('</api/sow/sow-a/items?page=2&limit=20>; rel="next"')
    assert "evil" not in link and "javascript" not in link and link.count("<") == 3


def test_link_header_is_ascii_for_non_ascii_paths() -> None:
    # (WSGITransport cannot send a non-ASCII PATH_INFO the way real servers do.)
    header = link_header("http://h", "/api/sow/sow-ü/items", {"type": "tâche"}, 2, 10, 35)
    header.encode("ascii")
    assert '<http://h/api/sow/sow-%C3%BC/items?type=t%C3%A2che&page=3&limit=10>; rel="next"' in header
    assert 'page=1&limit=10>; rel="prev"' in header and 'page=4&limit=10>; rel="last"' in header


@pytest.mark.parametrize("proto", [None, "https", "javascript"])
@pytest.mark.parametrize("forwarded_host", [None, "", "proxy.example:8443"])
@pytest.mark.parametrize("host", [None, "", "api.example", "h:8000"])
@pytest.mark.parametrize(
    ("scheme", "port"), [("http", "80"), ("http", "8080"), ("https", "443"), ("https", None)]
)
def test_the_links_origin_is_the_one_bottle_reads(proto, forwarded_host, host, scheme, port) -> None:
    environ = {"wsgi.url_scheme": scheme, "SERVER_NAME": "srv", "PATH_INFO": "/api/sow/s%20a/items"}
    given = {"HTTP_X_FORWARDED_PROTO": proto, "HTTP_X_FORWARDED_HOST": forwarded_host}
    given |= {"HTTP_HOST": host, "SERVER_PORT": port}
    environ |= {name: value for name, value in given.items() if value is not None}
    parts = bottle.BaseRequest(dict(environ)).urlparts
    assert request_origin(environ) == (parts.scheme, parts.netloc)


def test_literal_chain_route_wins_over_the_dependency_id(api: Api) -> None:
    response = api.get("/api/dependencies/chain?sowId=sow-a", api.member)
    assert response.status_code == 200, response.text
    assert response.json()["sowId"] == "sow-a"
    assert_group_a_error(api.get("/api/dependencies/chain", api.member), 400, "sowId")
    assert_group_a_error(api.get("/api/dependencies/dep-nope", api.member), 404, "dep-nope")


# --- routing errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/nowhere", "/api", "/api/items", "/api/sows/", "/api/external/nope"])
def test_unknown_route_is_404_in_group_a_envelope(api: Api, path: str) -> None:
    assert_group_a_error(api.get(path, api.member), 404, path)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PATCH", "/api/items/x", {"GET", "HEAD", "PUT", "DELETE"}),
        ("DELETE", "/api/sow/sow-a/items", {"GET", "HEAD", "POST"}),
        ("GET", "/api/sow/sow-a/items/reorder", {"PUT"}),
        ("PUT", "/healthz", {"GET", "HEAD"}),
    ],
)
def test_wrong_method_is_405_with_allow(api: Api, method: str, path: str, allowed: set[str]) -> None:
    response = api.request(method, path, api.member)
    assert_group_a_error(response, 405, f"method {method} not allowed")
    assert {part.strip() for part in response.headers["allow"].split(",")} == allowed


def test_group_c_paths_get_the_group_c_envelope(api: Api) -> None:
    issues = assert_group_c_error(api.get("/projects/nope", api.member), 404, "NOT_FOUND", "not found")
    assert "/projects/nope" in issues[0]["message"]
    assert_group_c_error(api.get("/clients/a/b"), 404, "NOT_FOUND", "not found")


# --- Group C -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/projects", "/clients"])
def test_group_c_auth_errors(api: Api, path: str) -> None:
    issues = assert_group_c_error(api.get(path), 401, "UNAUTHORIZED", "authorization not provided")
    assert issues == [
        {"path": ["Authorization"], "message": "missing bearer token (send Authorization: Bearer <token>)"}
    ]
    assert_group_c_error(api.get(path, "sowt_nope"), 401, "UNAUTHORIZED", "authorization not provided")
    assert_group_c_error(api.get(path, api.revoked), 401, "UNAUTHORIZED", "authorization not provided")


@pytest.mark.parametrize("path", ["/projects", "/clients"])
def test_group_c_wrong_method_is_405(api: Api, path: str) -> None:
    response = api.request("DELETE", path, api.member)
    assert_group_c_error(response, 405, "BAD_REQUEST", "invalid input data")
    assert "GET" in response.headers["allow"]


def test_group_c_lists_only_the_callers_organization(api: Api) -> None:
    response = api.get("/projects", api.member)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [project["id"] for project in body["projects"]] == [PROJECT_A]
    assert body["total"] == 1
    assert "x-total-count" not in response.headers  # Group C puts the total in the body


@pytest.mark.parametrize("query", ["limit=abc", "offset=-1", "limit=1&limit=2", "status=closed"])
def test_group_c_bad_query_is_bad_request(api: Api, query: str) -> None:
    issues = assert_group_c_error(
        api.get(f"/projects?{query}", api.member), 400, "BAD_REQUEST", "invalid input data"
    )
    assert issues and all(issue["message"] for issue in issues)


# --- unexpected failures -------------------------------------------------------------------------


def register(monkeypatch: pytest.MonkeyPatch, handler, **spec) -> None:
    spec = {"summary": "test operation", **spec}
    monkeypatch.setitem(operations.REGISTRY, spec["name"], Operation(handler=handler, **spec))


def explode(request) -> Result:
    raise RuntimeError("secret internals /etc/passwd")


def test_unexpected_error_is_500_without_details(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, explode, name="test.explode", method="GET", path="/api/test/explode", group="A")
    register(monkeypatch, explode, name="test.explode_c", method="GET", path="/projects/explode", group="C")
    api = make_api(db_url)
    response = api.get("/api/test/explode", api.member)
    assert response.json() == {"error": "internal server error"}
    assert response.status_code == 500
    assert "secret" not in response.text and "Traceback" not in response.text
    log = api.errors.getvalue()
    assert log.count("Traceback") == 1 and "RuntimeError: secret internals" in log
    assert response.headers["x-request-id"] in log

    response = api.get("/projects/explode", api.member)
    assert_group_c_error(response, 500, "INTERNAL_SERVER_ERROR", "internal server error")
    assert response.json()["issues"] == []


def fail_item_reads(monkeypatch: pytest.MonkeyPatch, failure) -> None:
    """Make reading an item fail both ways the server reads one: the token read in the item's
    statement (services.token_reads), and get_item after authenticating."""
    monkeypatch.setattr(item_service, "get_item", lambda caller, item_id: failure(item_id))
    monkeypatch.setattr(item_service, "get_item_with_token", lambda secret, item_id: failure(item_id))


def test_service_failure_is_500(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    fail_item_reads(monkeypatch, lambda item_id: 1 / 0)
    assert_group_a_error(api.get("/api/items/x", api.member), 500, "internal server error")
    assert "ZeroDivisionError" in api.errors.getvalue()


def test_unserialisable_result_is_500(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    register(
        monkeypatch,
        lambda request: Result({"value": object()}),
        name="test.bad_body",
        method="GET",
        path="/api/test/bad-body",
        group="A",
    )
    api = make_api(db_url)
    assert_group_a_error(api.get("/api/test/bad-body", api.member), 500, "internal server error")


def test_locked_database_is_503_after_retries(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def locked(item_id):
        calls.append(item_id)
        raise pw.OperationalError("database is locked")

    fail_item_reads(monkeypatch, locked)
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    response = api.get("/api/items/x", api.member)
    assert_group_a_error(response, 503, "busy")
    assert response.headers["retry-after"] == "1"
    assert len(calls) == 3  # ServerSettings.read_attempts
    assert "Traceback" not in api.errors.getvalue()


def test_domain_errors_from_handlers_keep_their_status(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(request):
        raise NotFound("widget w-1 not found")

    register(monkeypatch, missing, name="test.missing", method="GET", path="/api/test/missing", group="A")
    api = make_api(db_url)
    assert assert_group_a_error(api.get("/api/test/missing", api.member), 404) == "widget w-1 not found"


# --- Group B plumbing ------------------------------------------------------------------------------


def echo(request) -> Result:
    return Result({"organization": request.caller.organization_id, "company": request.company_id})


GROUP_B_NOW = datetime(2026, 3, 16, 12, 0, 5)  # the rate windows' clock, fixed: no test straddles a minute
GROUP_B_NEXT_MINUTE = calendar.timegm(datetime(2026, 3, 16, 12, 1, 0).timetuple())


@pytest.fixture
def group_b(migrated_db_url: str, monkeypatch: pytest.MonkeyPatch):
    clock.set_fixed_now(GROUP_B_NOW)
    register(monkeypatch, echo, name="test.echo", method="GET", path="/api/external/test-echo", group="B")
    api = make_api(migrated_db_url, ServerSettings(rate_per_minute=3))
    m.Company.create(id="comp-a", organization="org-a", name="A LLC")
    m.Company.create(id="comp-b", organization="org-b", name="B Inc")
    key = credentials.create_key("org-a").secret
    yield api, key
    api.client.close()


RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def scope(key: str | None, org: str | None = "org-a", company: str | None = "comp-a", plain=False) -> dict:
    prefix = "" if plain else "x-"
    headers = {"x-api-key": key, f"{prefix}organization-id": org, f"{prefix}company-id": company}
    return {name: value for name, value in headers.items() if value is not None}


def test_group_b_resolves_the_scope(group_b) -> None:
    api, key = group_b
    response = api.client.get("/api/external/test-echo", headers=scope(key))
    assert response.status_code == 200, response.text
    assert response.json() == {"organization": "org-a", "company": "comp-a"}
    assert response.headers["x-ratelimit-limit"] == "3"
    assert response.headers["x-ratelimit-remaining"] == "2"
    # the un-prefixed spelling is accepted too
    response = api.client.get("/api/external/test-echo", headers=scope(key, plain=True))
    assert response.json() == {"organization": "org-a", "company": "comp-a"}


@pytest.mark.parametrize("key", [None, "", "sowk_wrong"])
def test_group_b_bad_key_is_401_with_uncounted_rate_headers(group_b, key) -> None:
    """Every Group B response carries the rate headers; with no key to charge, they
    describe the minute window with nothing counted."""
    api, good = group_b
    response = api.client.get("/api/external/test-echo", headers=scope(key))
    assert_group_a_error(response, 401, "API key")
    assert response.headers["x-ratelimit-limit"] == "3"
    assert response.headers["x-ratelimit-remaining"] == "3"
    reset = int(response.headers["x-ratelimit-reset"])
    assert reset == GROUP_B_NEXT_MINUTE
    assert "retry-after" not in response.headers and "www-authenticate" not in response.headers
    # nothing was charged to any key: the valid key still has its whole quota
    after = api.client.get("/api/external/test-echo", headers=scope(good))
    assert after.headers["x-ratelimit-remaining"] == "2"


def test_group_b_revoked_key_is_401(group_b) -> None:
    api, key = group_b
    credentials.revoke_key(key)
    assert_group_a_error(api.client.get("/api/external/test-echo", headers=scope(key)), 401, "revoked")


@pytest.mark.parametrize(
    ("org", "company", "status", "message"),
    [
        (None, "comp-a", 400, "x-organization-id"),
        ("org-a", None, 400, "x-company-id"),
        ("org-b", "comp-b", 404, "organization org-b not found"),
        ("org-a", "comp-b", 404, "company comp-b not found"),
    ],
)
def test_group_b_scope_errors_carry_rate_headers(group_b, org, company, status, message) -> None:
    api, key = group_b
    response = api.client.get("/api/external/test-echo", headers=scope(key, org, company))
    assert_group_a_error(response, status, message)
    assert all(name in response.headers for name in RATE_HEADERS)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/external/nope", 404),
        ("GET", "/api/external", 404),
        ("DELETE", "/api/external/test-echo", 405),
    ],
)
def test_group_b_routing_errors_carry_uncounted_rate_headers(group_b, method, path, status) -> None:
    """Every Group B response carries the rate headers, also an unknown
    route or method, which no key is charged for (as with a refused key)."""
    api, key = group_b
    response = api.client.request(method, path, headers=scope(key))
    assert_group_a_error(response, status)
    assert response.headers["x-ratelimit-limit"] == "3"
    assert response.headers["x-ratelimit-remaining"] == "3"
    assert int(response.headers["x-ratelimit-reset"]) % 60 == 0
    assert (
        api.client.get("/api/external/test-echo", headers=scope(key)).headers["x-ratelimit-remaining"] == "2"
    )
    # the other groups have no rate limit, so no headers
    assert not any(name in api.get("/api/nope", api.member).headers for name in RATE_HEADERS)


def test_group_b_rate_limit_is_429_with_retry_after(group_b) -> None:
    api, key = group_b
    for _ in range(3):
        assert api.client.get("/api/external/test-echo", headers=scope(key)).status_code == 200
    response = api.client.get("/api/external/test-echo", headers=scope(key))
    assert_group_a_error(response, 429, "rate limit")
    assert response.headers["retry-after"] == "55"
    assert response.headers["x-ratelimit-remaining"] == "0"
    # another key has its own quota
    other = credentials.create_key("org-a").secret
    assert api.client.get("/api/external/test-echo", headers=scope(other)).status_code == 200


def test_group_b_ignores_bearer_tokens(group_b) -> None:
    api, _ = group_b
    response = api.get("/api/external/test-echo", api.member)
    assert_group_a_error(response, 401, "API key")


@pytest.mark.parametrize("plain", [True, False])
def test_purchase_order_route_takes_either_header_spelling(group_b, plain: bool) -> None:
    api, key = group_b
    response = api.client.post(
        "/api/external/create-purchase-order", headers=scope(key, plain=plain), json={"title": "x"}
    )
    error = assert_group_a_error(response, 400)
    assert "header" not in error  # the scope was resolved; the body is what is missing
    assert all(name in response.headers for name in RATE_HEADERS)
    response = api.client.post("/api/external/create-purchase-order", headers=scope(key, None, None), json={})
    assert_group_a_error(response, 400, "organization-id")


# --- CORS --------------------------------------------------------------------------------------------


def test_cors_is_off_by_default(api: Api) -> None:
    response = api.client.get("/healthz", headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in response.headers
    assert api.client.options("/api/sows").status_code == 405


def test_cors_for_configured_origins(db_url: str) -> None:
    api = make_api(db_url, ServerSettings(cors_origins=("https://app.example",)))
    response = api.get("/api/sow/sow-a/items", api.member, headers={"Origin": "https://app.example"})
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert "X-Total-Count" in response.headers["access-control-expose-headers"]
    other = api.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    preflight = api.client.options(
        "/api/sows", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 204
    assert "Authorization" in preflight.headers["access-control-allow-headers"]


# --- the error shape, walked over every error path ---------------------------------------------------


def test_no_error_response_is_html(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    requests = [
        ("GET", "/nowhere", {}),
        ("PATCH", "/api/sows", {}),
        ("GET", "/api/sows", {}),
        ("POST", "/api/sows", {"content": b"{", "headers": {"Authorization": f"Bearer {api.member}"}}),
        ("POST", "/api/sows", {"content": b"x" * (MIB + 1)}),
        ("GET", "/projects/x", {}),
        ("TRACE", "/api/sows", {}),
    ]
    for method, path, kwargs in requests:
        response = api.client.request(method, path, **kwargs)
        assert response.status_code >= 400
        assert response.headers["content-type"] == "application/json", (method, path)
        assert "<html" not in response.text.lower() and "DOCTYPE" not in response.text
        response.json()


# --- threads ----------------------------------------------------------------------------------------


def test_threads_each_reuse_one_connection(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    database = m.database_proxy.obj
    connects: list[int] = []
    real_connect = database._connect

    def counting_connect():
        connects.append(threading.get_ident())
        return real_connect()

    monkeypatch.setattr(database, "_connect", counting_connect)

    def work(index: int) -> list[int]:
        statuses = []
        for round_ in range(5):
            created = api.request(
                "POST",
                "/api/sow/sow-a/items",
                api.member,
                json={"title": f"t{index}-{round_}", "type": "task_item"},
            )
            statuses += [created.status_code, api.get("/api/sow/sow-a/items", api.viewer).status_code]
        return statuses

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(8)))
    assert {status for statuses in results for status in statuses} == {200, 201}
    assert api.get("/api/sow/sow-a/items?limit=100", api.member).headers["x-total-count"] == "40"
    assert len(connects) == len(set(connects)) <= 4  # one connection per thread, kept across requests
