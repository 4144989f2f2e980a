"""What one request may make the server do, over HTTP: lists are counted before their elements
are validated, a refusal lists a bounded number of problems, and JSON nested deeper than
``limits.MAX_JSON_DEPTH`` is refused before it is parsed; each answer in its group's envelope,
and nothing is stored.

An audit sent 250,000 empty line items (0.75 MB) to the purchase-order route: 16 s of CPU,
0.9 GiB more in the worker and a 43 MB answer listing every missing field.
"""

from __future__ import annotations

import json

import httpx
import pytest

from sowctl.foundation.budgets import MAX_JSON_DEPTH, MAX_LINE_ITEMS, MAX_REORDER_ENTRIES, MAX_REPORTED_ISSUES
from sowctl.foundation.errors import InvalidInput, Issue
from sowctl.server.envelopes import envelope
from sowctl.storage import models as m
from tests.support.finance import ORG, build_finance, po_body
from tests.support.server_api import Api, assert_group_a_error, create_item

PO_PATH = "/api/external/create-purchase-order"
REORDER_PATH = "/api/sow/sow-a/items/reorder"
SMALL = 4096  # bytes: every refusal below fits, whatever the request held


def nested(levels: int) -> str:
    """A JSON value of ``levels`` arrays inside one another."""
    return "[" * levels + "]" * levels


def post_po(api: Api, key: str, content: bytes) -> httpx.Response:
    headers = {"x-api-key": key, "organization-id": ORG, "company-id": "comp-acme-llc"}
    headers["Content-Type"] = "application/json"
    return api.client.post(PO_PATH, content=content, headers=headers)


def put_reorder(api: Api, content: bytes) -> httpx.Response:
    headers = {"Authorization": f"Bearer {api.member}", "Content-Type": "application/json"}
    return api.client.put(REORDER_PATH, content=content, headers=headers)


def stored() -> tuple[int, ...]:
    """Rows of every table a refused request could have written."""
    return (
        m.PurchaseOrder.select().count(),
        m.PurchaseOrderLine.select().count(),
        m.Item.select().count(),
        m.Dependency.select().count(),
    )


def order_indexes() -> list[tuple[str, int]]:
    return [(item.id, item.order_index) for item in m.Item.select().order_by(m.Item.id)]


@pytest.fixture
def key(api: Api) -> str:
    """An API key of org-acme (Group B), beside the Group A data of ``api``."""
    return build_finance().key


# --- list counts, before the elements ------------------------------------------------------


def test_250000_empty_line_items_are_refused_by_their_count_with_a_small_answer(api: Api, key: str) -> None:
    body = po_body(line_items=[{}] * 250_000)
    content = json.dumps(body, separators=(",", ":")).encode()
    assert len(content) > 700_000  # under the 1 MiB body limit: the server reads it
    before = stored()

    response = post_po(api, key, content)

    assert response.status_code == 400, response.text[:500]
    assert len(response.content) < SMALL  # 43 MB before
    assert response.json() == {
        "error": f"Invalid parameter line_items: must contain at most {MAX_LINE_ITEMS} line items "
        "(this one has 250000)"
    }
    assert stored() == before


def test_a_reorder_of_more_entries_than_the_limit_is_refused_by_its_count(api: Api) -> None:
    item = create_item(api)
    before, indexes = stored(), order_indexes()
    entries = [{"id": item["id"], "orderIndex": 1}] * (MAX_REORDER_ENTRIES + 1)

    response = put_reorder(api, json.dumps({"items": entries}).encode())

    error = assert_group_a_error(response, 400)
    assert (
        error
        == f"items: must contain at most {MAX_REORDER_ENTRIES} items (this one has {MAX_REORDER_ENTRIES + 1})"
    )
    assert (stored(), order_indexes()) == (before, indexes)


# --- many problems within the counts: the first few, and how many more --------------------------


def test_a_thousand_wrong_lines_are_answered_with_the_first_problems_and_a_count(api: Api, key: str) -> None:
    before = stored()
    body = po_body(line_items=[{"description": "x"}] * MAX_LINE_ITEMS)  # amount, cost_code_id missing

    response = post_po(api, key, json.dumps(body).encode())

    assert response.status_code == 400
    assert len(response.content) < SMALL
    error = response.json()["error"]
    problems = error.split("; ")
    assert len(problems) == MAX_REPORTED_ISSUES
    assert problems[:2] == [
        "Missing required parameter line_items[0].amount",
        "Missing required parameter line_items[0].cost_code_id",
    ]
    assert problems[-1].endswith(f"(and {2 * MAX_LINE_ITEMS - MAX_REPORTED_ISSUES} more problems)")
    assert stored() == before


def test_ten_thousand_wrong_reorder_entries_are_answered_with_a_bounded_message(api: Api) -> None:
    create_item(api)
    before, indexes = stored(), order_indexes()

    response = put_reorder(api, json.dumps({"items": [{}] * MAX_REORDER_ENTRIES}).encode())

    error = assert_group_a_error(response, 400)
    assert len(response.content) < SMALL  # about 600 KB before
    assert error.startswith("items.0.id: is required; items.0.orderIndex: is required; items.1.id")
    assert error.endswith(f"(and {2 * MAX_REORDER_ENTRIES - MAX_REPORTED_ISSUES} more problems)")
    assert (stored(), order_indexes()) == (before, indexes)


def test_group_c_lists_the_first_issues_and_one_counting_the_rest() -> None:
    # Group C's routes take no body and a few query parameters, so no request of theirs has this
    # many problems; the envelope is bounded all the same, as every error is where it is made.
    issues = [Issue(("items", index, "id"), "is required") for index in range(1000)]

    answer = envelope("C", InvalidInput("invalid", issues))

    assert answer.status == 400
    assert answer.body["issues"][:2] == [
        {"path": ["items", 0, "id"], "message": "is required"},
        {"path": ["items", 1, "id"], "message": "is required"},
    ]
    assert len(answer.body["issues"]) == MAX_REPORTED_ISSUES + 1
    assert answer.body["issues"][-1] == {
        "path": [],
        "message": f"and {1000 - MAX_REPORTED_ISSUES} more problems",
    }


def test_a_refusal_quotes_a_huge_key_cut_short(api: Api) -> None:
    huge = "k" * 500_000
    response = api.client.post(
        "/api/sow/sow-a/items",
        content=f'{{"title": "a", "{huge}": 1, "{huge}": 2, "type": "task_item"}}'.encode(),
        headers={"Authorization": f"Bearer {api.member}", "Content-Type": "application/json"},
    )
    assert_group_a_error(response, 400, "malformed JSON: duplicated key 'kkkk")
    assert len(response.content) < SMALL


# --- nesting ---------------------------------------------------------------------------------


def test_a_group_a_body_nested_past_the_limit_is_refused_even_where_fields_are_ignored(api: Api) -> None:
    before = stored()
    # An unknown field is ignored, whatever its value: the nesting is what is refused.
    content = f'{{"title": "a", "type": "task_item", "extra": {nested(MAX_JSON_DEPTH)}}}'.encode()

    response = api.request("POST", "/api/sow/sow-a/items", api.member, content=content)

    assert_group_a_error(
        response, 400, f"request body: arrays and objects are nested more than {MAX_JSON_DEPTH} levels deep"
    )
    assert stored() == before
    at_limit = f'{{"title": "a", "type": "task_item", "extra": {nested(MAX_JSON_DEPTH - 1)}}}'.encode()
    assert api.request("POST", "/api/sow/sow-a/items", api.member, content=at_limit).status_code == 201


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH, 20_000, 300_000])
def test_a_group_b_body_nested_past_the_limit_is_refused(api: Api, key: str, levels: int) -> None:
    before = stored()
    content = json.dumps(po_body())[:-1].encode() + f', "extra": {nested(levels)}}}'.encode()

    response = post_po(api, key, content)

    assert response.status_code == 400
    assert response.json() == {
        "error": f"request body: arrays and objects are nested more than {MAX_JSON_DEPTH} levels deep "
        f"(line 1, column {content.index(b'[[') + MAX_JSON_DEPTH})"
    }
    assert response.headers["X-RateLimit-Limit"] == "100"
    assert stored() == before


def test_brackets_inside_strings_do_not_count(api: Api) -> None:
    title = "[" * 1000 + '\\"{' * 100
    response = api.request(
        "POST",
        "/api/sow/sow-a/items",
        api.member,
        content=f'{{"title": "{title}", "type": "task_item"}}'.encode(),
    )
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "[" * 1000 + '"{' * 100
