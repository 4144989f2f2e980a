"""Group B over HTTP, through the Bottle app.

The app is driven in process with ``httpx.WSGITransport``. Every route is checked
for each status the API documents: 200, 400, 401 (missing, invalid, revoked key), 404
(organization, company, project, snapshot, prime contract), 429 and 500, with
both spellings of the scope headers.
"""

from __future__ import annotations

import calendar
import io
import json
import threading
from dataclasses import dataclass
from datetime import datetime

import httpx
import pytest

from sowctl.foundation import clock
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.services import budgets, contracts, credentials, purchase_orders
from sowctl.storage import models as m
from tests.support.client import wsgi_client
from tests.support.finance import (
    COMPANY,
    GLOBEX_COMPANY,
    GLOBEX_ORG,
    ORG,
    OTHER_COMPANY,
    FinanceData,
    build_finance,
    po_body,
)

T0 = datetime(2026, 3, 16, 12, 0, 5)
NEXT_MINUTE = calendar.timegm(datetime(2026, 3, 16, 12, 1).timetuple())
PO_PATH = "/api/external/create-purchase-order"
READS = [
    ("/api/external/budget-views", {"project_id": "101"}),
    ("/api/external/budget-view-snapshots", {"project_id": "101"}),
    ("/api/external/budget-view-snapshot", {"project_id": "101", "snapshot_id": "21"}),
    ("/api/external/prime-contract-details", {"project_id": "101", "prime_contract_id": "31"}),
    ("/api/external/purchase-orders", {"project_id": "101"}),
]
ROUTES = [(path, query) for path, query in READS] + [(PO_PATH, None)]


@dataclass
class Api:
    client: httpx.Client
    log: io.StringIO
    data: FinanceData

    def call(
        self,
        path: str,
        query: dict | None = None,
        *,
        key: str | None = "default",
        org: str | None = ORG,
        company: str | None = COMPANY,
        plain: bool | None = None,
        body: object = None,
    ) -> httpx.Response:
        """Call a route; the scope headers use the route's documented spelling unless ``plain``."""
        is_po = path == PO_PATH
        plain = is_po if plain is None else plain
        prefix = "" if plain else "x-"
        headers = {}
        if key is not None:
            headers["x-api-key"] = self.data.key if key == "default" else key
        if org is not None:
            headers[f"{prefix}organization-id"] = org
        if company is not None:
            headers[f"{prefix}company-id"] = company
        if is_po:
            return self.client.post(path, headers=headers, json=po_body() if body is None else body)
        return self.client.get(path, params=query, headers=headers)


def make_api(db_url: str, settings: ServerSettings | None = None) -> Api:
    app = create_app(db_url, settings)
    data = build_finance()
    client = wsgi_client(app)
    return Api(client, client.errors, data)  # type: ignore[attr-defined]


@pytest.fixture
def api(migrated_db_url) -> Api:
    clock.set_fixed_now(T0)  # no test straddles a rate-limit minute
    return make_api(migrated_db_url)


def assert_error(response: httpx.Response, status: int, text: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"], body
    assert text in body["error"], body
    assert "Traceback" not in response.text


def stored_orders() -> tuple[int, int]:
    return m.PurchaseOrder.select().count(), m.PurchaseOrderLine.select().count()


# --- 200 ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "query"), ROUTES)
@pytest.mark.parametrize("plain", [False, True])
def test_success_with_either_header_spelling(api, path, query, plain):
    response = api.call(path, query, plain=plain)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["X-RateLimit-Limit"] == "100"
    assert response.headers["X-RateLimit-Remaining"] == "99"
    assert response.headers["X-RateLimit-Reset"] == str(NEXT_MINUTE)
    assert "Retry-After" not in response.headers


def test_read_bodies(api):
    views = api.call(*READS[0]).json()
    assert [view["id"] for view in views["data"]] == [11, 12]
    assert views["data"][0] == {
        "id": 11,
        "name": "Original vs. Current",
        "description": "Original vs. Current view",
        "created_at": "2026-03-01T09:30:00Z",
        "updated_at": "2026-03-10T17:45:05Z",
        "project_id": 101,
    }
    summaries = api.call(*READS[1]).json()["data"]
    assert [s["id"] for s in summaries] == [21, 22]
    assert "line_items" not in summaries[0]
    detail = api.call(*READS[2]).json()["data"]
    assert detail["totals"]["original_budget"] == 1000000.3
    assert detail["line_items"][0]["variance"] == -0.2
    contract = api.call(*READS[3]).json()["data"]
    assert isinstance(contract, list) and len(contract) == 1
    assert contract[0]["contract_date"] == "2025-11-01T00:00:00Z"
    assert contract[0]["payment_terms"]["days_until_due"] == 30


def test_exact_json_numbers_on_the_wire(api):
    text = api.call(*READS[2]).text
    assert '"original_budget":1000000.3,' in text.replace(" ", "")
    assert '"variance":-50000.2' in text.replace(" ", "")
    assert "0000000001" not in text and "9999999" not in text


def test_purchase_order_over_http(api):
    response = api.call(PO_PATH)
    assert response.status_code == 200
    order = response.json()
    assert order["number"] == "PO-101-0001"
    assert (order["original_amount"], order["revised_amount"], order["total_amount"]) == ("0.30",) * 3
    assert [line["amount"] for line in order["line_items"]] == ["0.10", "0.20"]
    assert order["vendor"] == {"id": 7, "name": "Keystone Steel"}
    assert order["line_items"][0]["cost_code"] == {"id": 3, "full_code": "05-120", "name": "Structural Steel"}
    assert api.call(*READS[4]).json() == {"data": [order]}


def test_purchase_orders_are_listed_a_page_at_a_time(api):
    """Before: the whole list in one answer (10 s and 32 MB for 100,000 orders)."""
    numbers = [api.call(PO_PATH).json()["number"] for _ in range(5)]
    page = api.call("/api/external/purchase-orders", {"project_id": "101", "page": "2", "limit": "2"})
    assert page.status_code == 200, page.text
    assert [order["number"] for order in page.json()["data"]] == numbers[2:4]
    assert page.headers["X-Total-Count"] == "5"
    assert 'rel="next"' in page.headers["Link"] and "page=3" in page.headers["Link"]
    last = api.call("/api/external/purchase-orders", {"project_id": "101", "page": "3", "limit": "2"})
    assert [order["number"] for order in last.json()["data"]] == numbers[4:]
    first = api.call("/api/external/purchase-orders", {"project_id": "101"})
    assert len(first.json()["data"]) == 5 and first.headers["X-Total-Count"] == "5"  # 20 a page


def test_large_amounts_are_exact_over_http(api):
    body = po_body(
        line_items=[
            {"description": "a", "amount": "99999999999999.99", "cost_code_id": 3},
            {"description": "b", "amount": "99999999999999.99", "cost_code_id": 3},
            {"description": "c", "amount": "0.02", "cost_code_id": 4},
        ]
    )
    order = api.call(PO_PATH, body=body).json()
    assert order["total_amount"] == "200000000000000.00"
    assert order["line_items"][0]["amount"] == "99999999999999.99"


# --- 400 --------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "query"), READS)
def test_missing_query_parameter(api, path, query):
    for param in query:
        sent = {k: v for k, v in query.items() if k != param}
        assert_error(api.call(path, sent), 400, f"Missing required parameter {param} in query parameters")
        bad = {**query, param: "twelve"}
        assert_error(api.call(path, bad), 400, f"Invalid parameter {param} in query parameters")


@pytest.mark.parametrize(
    "field", ["project_id", "commitment_id", "title", "vendor_id", "status", "line_items"]
)
def test_missing_po_field_is_named(api, field):
    body = po_body()
    del body[field]
    assert_error(api.call(PO_PATH, body=body), 400, f"Missing required parameter {field}")
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize("field", ["description", "amount", "cost_code_id"])
def test_missing_line_field_is_named(api, field):
    body = po_body()
    del body["line_items"][0][field]
    assert_error(api.call(PO_PATH, body=body), 400, f"Missing required parameter line_items[0].{field}")
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (0.1, "line_items[1].amount: must be a decimal string"),
        ("ten", "line_items[1].amount: must be a decimal string"),
        ("-5.00", "line_items[1].amount: must not be negative"),
        ("1.000001", "line_items[1].amount: must have at most 4 digits"),
    ],
)
def test_bad_amount_over_http(api, amount, text):
    body = po_body()
    body["line_items"][1]["amount"] = amount
    assert_error(api.call(PO_PATH, body=body), 400, text)
    assert stored_orders() == (0, 0)


def post_po_text(api, content: bytes):
    """A purchase-order request whose body is ``content`` as it is (no JSON encoding)."""
    headers = {"x-api-key": api.data.key, "organization-id": ORG, "company-id": COMPANY}
    return api.client.post(PO_PATH, content=content, headers={**headers, "content-type": "application/json"})


def test_malformed_json_body(api):
    assert_error(post_po_text(api, b'{"project_id": "101",'), 400, "")


def test_an_integer_too_long_for_python_is_named_in_group_b_words(api):
    text = json.dumps(po_body()).replace('"vendor_id": 7', '"vendor_id": ' + "7" * 5000)
    assert '"vendor_id": 777' in text
    response = post_po_text(api, text.encode())
    assert_error(response, 400, "Invalid parameter vendor_id: must be a number of at most 4300 digits")
    assert "sys." not in response.text
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize(("path", "query"), ROUTES)
@pytest.mark.parametrize(
    ("org", "company", "text"),
    [(None, COMPANY, "organization-id"), (ORG, None, "company-id")],
)
def test_missing_scope_header(api, path, query, org, company, text):
    assert_error(api.call(path, query, org=org, company=company), 400, f"Missing required header x-{text}")


# --- 401 ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "query"), ROUTES)
def test_missing_invalid_and_revoked_keys(api, path, query):
    assert_error(api.call(path, query, key=None), 401, "missing API key")
    assert_error(api.call(path, query, key="sowk_not-a-real-key"), 401, "invalid API key")
    revoked = credentials.create_key(ORG).secret
    credentials.revoke_key(revoked)
    assert_error(api.call(path, query, key=revoked), 401, "revoked")
    assert stored_orders() == (0, 0)


# --- 404 ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "query"), ROUTES)
@pytest.mark.parametrize(
    ("org", "company", "text"),
    [
        (GLOBEX_ORG, GLOBEX_COMPANY, "organization org-globex not found"),  # not the key's organization
        ("org-nope", COMPANY, "organization org-nope not found"),
        (ORG, GLOBEX_COMPANY, "company comp-globex not found"),  # another organization's company
        (ORG, "comp-nope", "company comp-nope not found"),
        (ORG, OTHER_COMPANY, "project 101 not found"),  # the org's company, but not the project's
    ],
)
def test_out_of_scope_is_not_found(api, path, query, org, company, text):
    assert_error(api.call(path, query, org=org, company=company), 404, text)
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize(("path", "query"), READS)
def test_unknown_project(api, path, query):
    assert_error(api.call(path, {**query, "project_id": "999"}), 404, "project 999 not found")


@pytest.mark.parametrize("project_id", ["999", "abc", "Tower A", "-101", "101.0", "9" * 30])
def test_unknown_project_for_a_purchase_order(api, project_id):
    """project_id is a string: one that is no project number is an unknown project (404),
    in the same words as an unknown number, and nothing is written."""
    response = api.call(PO_PATH, body=po_body(project_id=project_id))
    assert_error(response, 404, "")
    assert response.json() == {"error": f"project {project_id} not found"}
    assert stored_orders() == (0, 0)
    # the scope is checked first, whatever the project
    response = api.call(PO_PATH, company="comp-nope", body=po_body(project_id=project_id))
    assert response.json() == {"error": "company comp-nope not found"}
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize(
    ("project_id", "text"),
    [
        (101, "Invalid parameter project_id: must be a string"),
        (None, "Invalid parameter project_id: must not be null"),
        ("", "Invalid parameter project_id: must be a non-empty id"),
    ],
)
def test_a_project_id_that_is_no_string_id_is_a_bad_request(api, project_id, text):
    assert_error(api.call(PO_PATH, body=po_body(project_id=project_id)), 400, text)
    assert stored_orders() == (0, 0)


def test_another_organizations_key_sees_only_its_own(api):
    globex = {"key": api.data.globex_key, "org": GLOBEX_ORG, "company": GLOBEX_COMPANY}
    assert_error(api.call(*READS[0], **globex), 404, "project 101 not found")
    assert api.call("/api/external/budget-views", {"project_id": "201"}, **globex).status_code == 200


@pytest.mark.parametrize(
    ("path", "query", "text"),
    [
        ("/api/external/budget-view-snapshot", {"snapshot_id": "99"}, "snapshot 99 not found"),
        ("/api/external/budget-view-snapshot", {"snapshot_id": "24"}, "snapshot 24 not found"),
        ("/api/external/prime-contract-details", {"prime_contract_id": "99"}, "prime contract 99 not found"),
        ("/api/external/prime-contract-details", {"prime_contract_id": "41"}, "prime contract 41 not found"),
    ],
)
def test_unknown_snapshot_or_prime_contract(api, path, query, text):
    assert_error(api.call(path, {"project_id": "101", **query}), 404, text)


@pytest.mark.parametrize(
    ("changes", "text"),
    [
        ({"vendor_id": 9}, "vendor 9 not found"),
        ({"commitment_id": "5002"}, "commitment 5002 not found"),
    ],
)
def test_purchase_order_references_must_be_in_the_company(api, changes, text):
    assert_error(api.call(PO_PATH, body=po_body(**changes)), 404, text)
    assert stored_orders() == (0, 0)


def test_one_bad_line_item_leaves_no_order_and_no_lines(api):
    body = po_body()
    body["line_items"].append({"description": "foreign", "amount": "5.00", "cost_code_id": 5})
    assert_error(api.call(PO_PATH, body=body), 404, "cost code 5 not found (line_items[2].cost_code_id)")
    assert stored_orders() == (0, 0)
    assert api.call(*READS[4]).json() == {"data": []}
    assert api.call(PO_PATH).json()["number"] == "PO-101-0001"


# --- 429 ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "query"), ROUTES)
def test_rate_limit_after_100_requests_in_a_minute(api, path, query):
    for n in range(100):
        response = api.call(path, query)
        assert response.status_code == 200, response.text
        assert response.headers["X-RateLimit-Remaining"] == str(99 - n)
    refused = api.call(path, query)
    assert_error(refused, 429, "rate limit exceeded")
    assert refused.headers["Retry-After"] == "55"  # T0 is 5 s into the minute
    assert refused.headers["X-RateLimit-Limit"] == "100"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    assert refused.headers["X-RateLimit-Reset"] == api.call(path, query).headers["X-RateLimit-Reset"]
    # Another key of the same organization has its own quota.
    other = credentials.create_key(ORG).secret
    assert api.call(path, query, key=other).status_code == 200
    # The next minute, the first key may call again.
    clock.set_fixed_now(datetime(2026, 3, 16, 12, 1, 0))
    assert api.call(path, query).status_code == 200


def test_rate_limit_counts_before_scope_checks(api):
    """A request with a valid key counts even if its headers are wrong (it reached us)."""
    for _ in range(100):
        api.call(*READS[0], org=None)
    assert_error(api.call(*READS[0]), 429, "rate limit exceeded")


def test_daily_limit_is_configurable(db_url):
    clock.set_fixed_now(T0)
    api = make_api(db_url, ServerSettings(rate_per_minute=100, rate_per_day=3))
    remaining = [api.call(*READS[0]).headers["X-RateLimit-Remaining"] for _ in range(3)]
    assert remaining == ["2", "1", "0"]
    refused = api.call(*READS[0])
    assert_error(refused, 429, "rate limit exceeded")
    assert refused.headers["X-RateLimit-Limit"] == "3"
    assert int(refused.headers["Retry-After"]) == 86400 - (12 * 3600 + 5)


def test_150_concurrent_requests_exactly_100_succeed(api):
    statuses: list[int] = []
    errors: list[BaseException] = []
    # 50 threads sending 3 requests each: every thread holds one database connection, and
    # PostgreSQL's default max_connections (100) would refuse 150 of them with a 503.
    barrier = threading.Barrier(50)
    transport = api.client._transport

    def request() -> None:
        try:
            with httpx.Client(transport=transport, base_url="http://test") as client:
                barrier.wait()
                for _ in range(3):
                    response = client.get(
                        "/api/external/budget-views",
                        params={"project_id": "101"},
                        headers={
                            "x-api-key": api.data.key,
                            "x-organization-id": ORG,
                            "x-company-id": COMPANY,
                        },
                    )
                    statuses.append(response.status_code)
        except BaseException as exc:
            errors.append(exc)
        finally:
            m.database_proxy.close()

    threads = [threading.Thread(target=request) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (statuses.count(200), statuses.count(429)) == (100, 50)


# --- 500 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "query", "service", "function"),
    [
        ("/api/external/budget-views", {"project_id": "101"}, budgets, "list_budget_views"),
        ("/api/external/budget-view-snapshots", {"project_id": "101"}, budgets, "list_snapshots"),
        (
            "/api/external/budget-view-snapshot",
            {"project_id": "101", "snapshot_id": "21"},
            budgets,
            "get_snapshot",
        ),
        (
            "/api/external/prime-contract-details",
            {"project_id": "101", "prime_contract_id": "31"},
            contracts,
            "get_prime_contract",
        ),
        ("/api/external/purchase-orders", {"project_id": "101"}, purchase_orders, "list_purchase_orders"),
        (PO_PATH, None, purchase_orders, "create_purchase_order"),
    ],
)
def test_unexpected_failure_is_a_500_without_traceback(api, monkeypatch, path, query, service, function):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(service, function, broken)
    response = api.call(path, query)
    assert_error(response, 500, "internal server error")
    assert "secret internals" not in response.text
    assert "RuntimeError" in api.log.getvalue()  # logged on the server side instead
    assert "X-RateLimit-Remaining" in response.headers


def test_failure_while_writing_lines_is_a_500_and_leaves_nothing(api, monkeypatch):
    original = m.PurchaseOrderLine.create
    calls: list[dict] = []

    def failing_create(**fields):
        calls.append(fields)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(**fields)

    monkeypatch.setattr(m.PurchaseOrderLine, "create", failing_create)
    assert_error(api.call(PO_PATH), 500, "internal server error")
    monkeypatch.undo()
    assert stored_orders() == (0, 0)


# --- OpenAPI ----------------------------------------------------------------------------


def test_openapi_documents_the_group_b_routes(api):
    document = api.client.get("/openapi.json").json()
    paths = document["paths"]
    for path, _query in ROUTES:
        assert path in paths
    params = {p["name"]: p for p in paths["/api/external/budget-view-snapshot"]["get"]["parameters"]}
    assert params["project_id"]["required"] and params["project_id"]["schema"]["type"] == "integer"
    assert params["snapshot_id"]["required"]
