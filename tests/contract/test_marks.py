"""Contract mode's judge: which departures from the service's description a request relies on."""

from __future__ import annotations

from typing import Any

import pytest

from sowctl.operations.contract import DEPARTURES, LENIENCY, Request, marks, refused_in_strict_mode
from sowctl.operations.routes import match


def judged(
    method: str,
    path: str,
    query: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> list[tuple[str, str]]:
    found = match(method, path)
    request = Request(
        operation=found[0] if found else None,
        method=method,
        path=path,
        query=query or {},
        body=body,
        headers=headers or {},
        content_type=content_type if body is not None else "",
    )
    return [(mark.code, mark.detail) for mark in marks(request)]


B_HEADERS = {"x-api-key": "k", "x-organization-id": "org-1", "x-company-id": "comp-1"}
PO_HEADERS = {"x-api-key": "k", "organization-id": "org-1", "company-id": "comp-1"}


@pytest.mark.parametrize(
    ("method", "path", "query", "body", "headers"),
    [
        (
            "GET",
            "/api/dependencies",
            {"sowId": "s", "type": "external", "page": "2", "limit": "100"},
            None,
            {},
        ),
        ("GET", "/api/dependencies/chain", {"sowId": "s", "format": "flat"}, None, {}),
        ("GET", "/api/sow/s/items", {"type": "task_item", "parentId": "p"}, None, {}),
        ("POST", "/api/sow/s/items", {}, {"title": "T", "type": "task_item", "orderIndex": 2}, {}),
        ("PUT", "/api/dependencies/d", {}, {"status": "resolved", "slaDate": "2026-12-01"}, {}),
        ("PUT", "/api/sow/s/items/reorder", {}, {"items": [{"id": "a", "orderIndex": 1}]}, {}),
        ("GET", "/projects", {"status": "active", "limit": "5", "offset": "0"}, None, {}),
        ("GET", "/clients", {}, None, {}),
        (
            "GET",
            "/api/external/budget-view-snapshot",
            {"project_id": "1", "snapshot_id": "2"},
            None,
            B_HEADERS,
        ),
        ("POST", "/api/external/create-purchase-order", {}, {"project_id": "1", "title": "t"}, PO_HEADERS),
    ],
)
def test_a_request_the_description_covers_is_not_marked(method, path, query, body, headers) -> None:
    assert judged(method, path, query, body, headers) == []


def test_each_extension_and_leniency_is_named_with_the_request_s_instance() -> None:
    assert judged("GET", "/api/sows") == [("route.extension", "GET /api/sows")]
    assert judged("DELETE", "/api/sows/sow-1") == [("route.extension", "DELETE /api/sows/{sowId}")]
    assert judged("GET", "/api/dependencies/chain", {"sowId": "s", "include": "risks"}) == [
        ("query.extension", "query parameter include")
    ]
    assert judged("GET", "/api/sow/s/items", {"status": "pending", "limit": "500"}) == [
        ("query.unknown", "query parameter status"),
        ("query.limit_clamped", "limit=500"),
    ]
    assert judged("GET", "/projects", {"page": "2"}) == [("query.unknown", "query parameter page")]
    assert judged("POST", "/api/sow/s/items", body={"title": "T", "type": "task_item", "id": "mine"}) == [
        ("body.extension", "body field id")
    ]
    assert judged("PUT", "/api/items/i", body={"title": "T", "parentItemId": "p"}) == [
        ("body.unknown", "body field parentItemId")
    ]
    assert judged("PUT", "/api/dependencies/d", body={"slaDate": "", "escalationDate": None}) == [
        ("value.cleared_date", 'slaDate: ""'),
        ("value.cleared_date", "escalationDate: null"),
    ]


def test_header_spellings_and_content_types_are_leniencies() -> None:
    swapped = {"x-api-key": "k", "organization-id": "org-1", "company-id": "comp-1"}
    assert judged("GET", "/api/external/budget-views", {"project_id": "1"}, headers=swapped) == [
        ("header.scope_spelling", "header organization-id"),
        ("header.scope_spelling", "header company-id"),
    ]
    assert judged("POST", "/api/external/create-purchase-order", body={}, headers=B_HEADERS) == [
        ("header.scope_spelling", "header x-organization-id"),
        ("header.scope_spelling", "header x-company-id"),
    ]
    assert judged("POST", "/api/dependencies", body={"notes": "n"}, content_type="") == [
        ("header.content_type", "body sent with no Content-Type")
    ]


def test_what_the_description_leaves_open_is_marked_but_not_refused_in_strict_mode() -> None:
    found = judged("GET", "/api/dependencies/chain", {"sowId": "s", "format": "tree"})
    assert found == [("answer.tree_shape", "format=tree")]
    assert judged("GET", "/api/dependencies", {"type": "overdue"}) == [
        ("answer.filter_rules", "type=overdue")
    ]
    request = Request(
        match("GET", "/api/dependencies")[0], "GET", "/api/dependencies", {"type": "critical"}, None, {}
    )
    assert refused_in_strict_mode(marks(request)) == []
    leniency = Request(match("GET", "/clients")[0], "GET", "/clients", {"sort": "name"}, None, {})
    assert [mark.kind for mark in refused_in_strict_mode(marks(leniency))] == [LENIENCY]


def test_a_path_with_no_route_is_not_marked() -> None:
    assert judged("GET", "/api/nothing-here") == []


def test_every_marked_departure_has_a_request_that_shows_it() -> None:
    """The table and the judge agree: no row that nothing can mark, no mark outside the table."""
    shown = {
        code
        for code, _ in [
            *judged("GET", "/api/sows"),
            *judged("GET", "/api/dependencies/chain", {"sowId": "s", "include": "risks", "format": "tree"}),
            *judged("GET", "/api/sow/s/items", {"x": "1", "limit": "101"}),
            *judged("POST", "/api/sow/s/items", body={"id": "i", "extra": 1}, content_type="text/plain"),
            *judged("PUT", "/api/dependencies/d", body={"slaDate": ""}),
            *judged("GET", "/api/dependencies", {"type": "critical"}),
            *judged("GET", "/api/external/budget-views", headers={"organization-id": "o"}),
        ]
    }
    assert shown == {departure.code for departure in DEPARTURES if departure.marked}


def test_the_docs_print_the_table_the_judge_uses() -> None:
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "contract-mode.md").read_text(encoding="utf-8")
    for departure in DEPARTURES:
        assert f"| `{departure.code}` | {departure.kind} | {departure.what} |" in page


def test_a_flood_of_unknown_names_is_marked_a_few_times_each_clipped() -> None:
    from sowctl.foundation.budgets import MAX_MARK_DETAIL_CHARS, MAX_MARKS_PER_DEPARTURE

    query = {f"p{n}": "x" for n in range(5_000)}
    body = {"title": "T", **{f"k{n}" * 100: 1 for n in range(3_000)}}
    found = judged("POST", "/api/sow/s/items", query, body)
    by_code = [code for code, _ in found]
    assert by_code == ["query.unknown"] * MAX_MARKS_PER_DEPARTURE + ["body.unknown"] * MAX_MARKS_PER_DEPARTURE
    assert all(len(detail) <= MAX_MARK_DETAIL_CHARS for _, detail in found)
