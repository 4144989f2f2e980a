"""Group B through the operation registry and the services.

``operations.call_local`` runs the same validation and handler as the HTTP
server, so the bodies asserted here are the API's bodies (and the CLI's --json).
"""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowctl import operations
from sowctl.foundation import money
from sowctl.foundation.errors import Forbidden, InvalidInput, NotFound
from sowctl.schemas.vocabulary import PO_STATUSES
from sowctl.services import external_scope
from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.finance import (
    COMPANY,
    GLOBEX_COMPANY,
    GLOBEX_ORG,
    ORG,
    OTHER_COMPANY,
    PROJECT,
    build_finance,
    po_body,
)

LOCAL = Caller.local()
ACME_MEMBER = Caller(user_id=None, organization_id=ORG, role="member")


@pytest.fixture
def fin(db):
    return build_finance()


def api(name: str, query=None, body=None, caller: Caller = LOCAL, company_id: str | None = None):
    return operations.call_local(name, caller, None, query, body, company_id=company_id)


def create_po(body=None, **kwargs) -> dict:
    return api("finance.create_po", body=po_body() if body is None else body, **kwargs)


def stored_orders() -> tuple[int, int]:
    return m.PurchaseOrder.select().count(), m.PurchaseOrderLine.select().count()


def error_of(exc_type, name: str, **kwargs) -> str:
    with pytest.raises(exc_type) as caught:
        api(name, **kwargs)
    return caught.value.message


# --- budget views ----------------------------------------------------------------


def test_budget_views_shape(fin):
    assert api("finance.budget_views", {"project_id": "101"}) == {
        "data": [
            {
                "id": 11,
                "name": "Original vs. Current",
                "description": "Original vs. Current view",
                "created_at": "2026-03-01T09:30:00Z",
                "updated_at": "2026-03-10T17:45:05Z",
                "project_id": 101,
            },
            {
                "id": 12,
                "name": "Forecast",
                "created_at": "2026-03-01T09:30:00Z",
                "updated_at": "2026-03-10T17:45:05Z",
                "project_id": 101,
            },
        ]
    }


def test_project_without_views_has_empty_data(fin):
    assert api("finance.budget_views", {"project_id": "102"}) == {"data": []}


# --- snapshots --------------------------------------------------------------------


def test_snapshot_summaries(fin):
    assert api("finance.snapshots", {"project_id": "101"}) == {
        "data": [
            {
                "id": 21,
                "name": "Month end",
                "description": "At month end",
                "created_at": "2026-03-01T09:30:00Z",
                "budget_view_id": 11,
                "project_id": 101,
                "created_by": {"id": 1, "name": "Ada Lovelace", "email": "ada@acme.example"},
            },
            {
                "id": 22,
                "name": "Empty forecast",
                "created_at": "2026-03-10T17:45:05Z",
                "budget_view_id": 12,
                "project_id": 101,
            },
        ]
    }


def test_snapshot_detail_lines_and_exact_totals(fin):
    detail = api("finance.snapshot", {"project_id": "101", "snapshot_id": "21"})["data"]
    assert [line["id"] for line in detail["line_items"]] == [1, 2, 3]
    assert detail["line_items"][0] == {
        "id": 1,
        "code": "01-500",
        "description": "01-500 work",
        "original_budget": 0.1,
        "current_budget": 0.1,
        "committed": 0.1,
        "spent": 0.1,
        "projected_total": 0.3,
        "variance": -0.2,  # stored
    }
    assert detail["line_items"][1]["variance"] == 0.1  # computed: 0.20 - 0.10
    assert detail["line_items"][2]["variance"] == -50000.1  # computed: 1200000.50 - 1250000.60
    # Column sums in Decimal: 0.10 + 0.20 + 1000000.00 is 1000000.30, not 1000000.3000000001.
    assert detail["totals"] == {
        "original_budget": 1000000.3,
        "current_budget": 1200000.8,
        "committed": 900000.55,
        "spent": 300001.05,
        "projected_total": 1250001.0,
        "variance": -50000.2,
    }
    text = json.dumps(detail)
    assert "0000000" not in text.replace("1000000", "").replace("1200000", "")  # no float noise
    for key, value in detail["totals"].items():
        column = sum(Decimal(repr(line[key])) for line in detail["line_items"])
        assert Decimal(repr(value)) == column, key
    assert set(detail) == {
        "id",
        "name",
        "description",
        "created_at",
        "budget_view_id",
        "project_id",
        "created_by",
        "line_items",
        "totals",
    }


def test_snapshot_without_lines_has_zero_totals(fin):
    detail = api("finance.snapshot", {"project_id": "101", "snapshot_id": "22"})["data"]
    assert detail["line_items"] == []
    assert detail["totals"] == dict.fromkeys(
        ("original_budget", "current_budget", "committed", "spent", "projected_total", "variance"), 0.0
    )


def test_float_sum_would_drift_but_totals_do_not(db, fin):
    values = ["0.10"] * 10 + ["0.20"] * 3
    assert sum(float(v) for v in values) != 1.6  # the drift we avoid
    for index, value in enumerate(values):
        m.SnapshotLineItem.create(
            snapshot=22,
            id=100 + index,
            position=index,
            code="x",
            original_budget=Decimal(value),
            current_budget=Decimal(value),
            committed=Decimal("0"),
            spent=Decimal("0"),
            projected_total=Decimal("0"),
        )
    totals = api("finance.snapshot", {"project_id": "101", "snapshot_id": "22"})["data"]["totals"]
    assert totals["original_budget"] == 1.6
    assert totals["variance"] == 1.6


# --- prime contract ---------------------------------------------------------------


def test_prime_contract_details_every_field(fin):
    assert api("finance.prime_contract", {"project_id": "101", "prime_contract_id": "31"}) == {
        "data": [
            {
                "id": 31,
                "title": "Tower A Prime Contract",
                "description": "Design-bid-build",
                "contract_number": "PC-2024-031",
                "status": "Active",
                "contract_date": "2025-11-01T00:00:00Z",
                "start_date": "2025-11-16T00:00:00Z",
                "estimated_completion_date": "2027-05-10T00:00:00Z",
                "original_contract_value": 12450000.0,
                "current_contract_value": 12762450.75,
                "executed_change_orders_value": 312450.75,
                "pending_change_orders_value": 84300.1,
                "project_id": 101,
                "customer": {
                    "id": 501,
                    "name": "Northwind Properties",
                    "contact_name": "Maria Chen",
                    "contact_email": "maria@northwind.example",
                    "contact_phone": "+1-555-0101",
                },
                "payment_terms": {
                    "type": "Progress Billing",
                    "payment_schedule": "Monthly",
                    "retention_percentage": 10.0,
                    "days_until_due": 30,
                },
            }
        ]
    }


# --- query parameters -------------------------------------------------

READS = [
    ("finance.budget_views", {"project_id": "101"}),
    ("finance.snapshots", {"project_id": "101"}),
    ("finance.snapshot", {"project_id": "101", "snapshot_id": "21"}),
    ("finance.prime_contract", {"project_id": "101", "prime_contract_id": "31"}),
    ("finance.list_pos", {"project_id": "101"}),
]
REQUIRED_PARAMS = [(name, param, query) for name, query in READS for param in query]


@pytest.mark.parametrize(("name", "param", "query"), REQUIRED_PARAMS)
@pytest.mark.parametrize("bad", [None, ""])
def test_missing_query_parameter_is_named(fin, name, param, query, bad):
    sent = {**query, param: bad}
    message = error_of(InvalidInput, name, query=sent)
    assert message == f"Missing required parameter {param} in query parameters"


@pytest.mark.parametrize(("name", "param", "query"), REQUIRED_PARAMS)
@pytest.mark.parametrize(
    "bad", ["abc", "1.5", "-3", "0x10", " 101", "\uff11\uff10\uff11", "99999999999999999999"]
)
def test_non_integer_query_parameter_is_named(fin, name, param, query, bad):
    message = error_of(InvalidInput, name, query={**query, param: bad})
    assert message.startswith(f"Invalid parameter {param} in query parameters: must be an integer")


def test_every_missing_parameter_is_named(fin):
    message = error_of(InvalidInput, "finance.snapshot", query={})
    assert message == (
        "Missing required parameter project_id in query parameters; "
        "Missing required parameter snapshot_id in query parameters"
    )


# --- scope: organization, company, project, snapshot, prime contract (404) ----------------


@pytest.mark.parametrize(("name", "query"), READS)
@pytest.mark.parametrize(
    ("caller", "company_id", "expected"),
    [
        (Caller.local(GLOBEX_ORG), None, "project 101 not found"),  # another organization's project
        (ACME_MEMBER, OTHER_COMPANY, "project 101 not found"),  # right org, another company
        (ACME_MEMBER, GLOBEX_COMPANY, "company comp-globex not found"),  # another org's company
        (LOCAL, "comp-nope", "company comp-nope not found"),
    ],
)
def test_out_of_scope_is_not_found(fin, name, query, caller, company_id, expected):
    assert error_of(NotFound, name, query=query, caller=caller, company_id=company_id) == expected


@pytest.mark.parametrize(("name", "query"), READS)
def test_unknown_project_is_not_found(fin, name, query):
    assert error_of(NotFound, name, query={**query, "project_id": "999"}) == "project 999 not found"


@pytest.mark.parametrize(("name", "query"), READS)
def test_scoped_caller_sees_its_project(fin, name, query):
    assert api(name, query, caller=ACME_MEMBER, company_id=COMPANY)["data"] is not None


@pytest.mark.parametrize(
    ("name", "query", "expected"),
    [
        (
            "finance.snapshot",
            {"project_id": "101", "snapshot_id": "99"},
            "snapshot 99 not found in project 101",
        ),
        # Snapshot 24 exists, but in project 201.
        (
            "finance.snapshot",
            {"project_id": "101", "snapshot_id": "24"},
            "snapshot 24 not found in project 101",
        ),
        (
            "finance.prime_contract",
            {"project_id": "101", "prime_contract_id": "99"},
            "prime contract 99 not found in project 101",
        ),
        (
            "finance.prime_contract",
            {"project_id": "101", "prime_contract_id": "41"},
            "prime contract 41 not found in project 101",
        ),
    ],
)
def test_missing_snapshot_or_contract_is_not_found(fin, name, query, expected):
    assert error_of(NotFound, name, query=query) == expected


# --- purchase orders: creation ---------------------------------------------------------


def test_create_purchase_order_response(fin):
    order = create_po()
    assert order == {
        "id": order["id"],
        "number": "PO-101-0001",
        "status": "draft",
        "title": "Upper tier steel",
        "vendor": {"id": 7, "name": "Keystone Steel"},
        "original_amount": "0.30",
        "revised_amount": "0.30",
        "total_amount": "0.30",
        "line_items": [
            {
                "id": order["line_items"][0]["id"],
                "description": "Columns",
                "amount": "0.10",
                "cost_code": {"id": 3, "full_code": "05-120", "name": "Structural Steel"},
            },
            {
                "id": order["line_items"][1]["id"],
                "description": "Plates",
                "amount": "0.20",
                "cost_code": {"id": 4, "full_code": "08-440", "name": "Curtain Wall"},
            },
        ],
    }
    assert isinstance(order["id"], int)
    assert all(isinstance(line["id"], int) for line in order["line_items"])
    assert api("finance.list_pos", {"project_id": "101"}) == {"data": [order]}


def test_amounts_are_stored_as_exact_text(fin):
    order = create_po()
    raw = m.database_proxy.execute_sql(
        "SELECT original_amount, revised_amount, total_amount FROM purchase_order WHERE id = ?"
        if m.database_proxy.obj.param == "?"
        else "SELECT original_amount, revised_amount, total_amount FROM purchase_order WHERE id = %s",
        (order["id"],),
    ).fetchone()
    assert tuple(raw) == ("0.30", "0.30", "0.30")
    line = m.PurchaseOrderLine.get(m.PurchaseOrderLine.description == "Plates")
    assert (line.quantity, line.unit_cost, line.position) == (Decimal(2), Decimal("0.10"), 1)


@pytest.mark.parametrize(
    ("amounts", "expected"),
    [
        (["0.10", "0.20"], "0.30"),
        (["99999999999999.99", "0.01"], "100000000000000.00"),
        (["999999999999999.9999", "0.0001"], "1000000000000000.00"),
        (["30"], "30.00"),
        (["1.5", "2"], "3.50"),
        (["0.125", "0.125"], "0.25"),
        (["0.1255"], "0.1255"),
        (["0"], "0.00"),
        (["-0.00", "5.00"], "5.00"),
        (["0007.50"], "7.50"),
        (["0.10"] * 1000, "100.00"),
    ],
)
def test_totals_are_exact_decimal_sums(fin, amounts, expected):
    lines = [{"description": f"line {i}", "amount": a, "cost_code_id": 3} for i, a in enumerate(amounts)]
    order = create_po(po_body(line_items=lines))
    assert order["original_amount"] == order["revised_amount"] == order["total_amount"] == expected
    assert Decimal(expected) == sum(Decimal(a) for a in amounts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.decimals(min_value=0, max_value=10**12, places=2), min_size=1, max_size=12))
def test_any_cents_sum_exactly(fin, values):
    lines = [{"description": "x", "amount": str(v), "cost_code_id": 4} for v in values]
    order = create_po(po_body(line_items=lines))
    assert Decimal(order["total_amount"]) == sum(values)
    assert [Decimal(line["amount"]) for line in order["line_items"]] == values


def test_numbers_are_sequential_per_project(fin):
    first, second = create_po(), create_po()
    other = create_po(po_body(project_id="102", commitment_id="5002", vendor_id=8))
    assert (first["number"], second["number"], other["number"]) == (
        "PO-101-0001",
        "PO-101-0002",
        "PO-102-0001",
    )


def test_numbering_continues_after_imported_orders(fin):
    for number in ("PO-101-0007", "LEGACY-12", "PO-101-x"):
        m.PurchaseOrder.create(
            financial_project=PROJECT,
            commitment="5001",
            number=number,
            status="issued",
            title="imported",
            vendor=7,
            original_amount=Decimal("1"),
            revised_amount=Decimal("1"),
            total_amount=Decimal("1"),
            created_at=m.BudgetView.get_by_id(11).created_at,
        )
    assert create_po()["number"] == "PO-101-0008"


def test_numbering_keeps_a_high_water_mark_instead_of_scanning_the_orders(fin):
    """Before: every create read all the project's numbers (16 ms at 10,000 orders)."""
    assert create_po()["number"] == "PO-101-0001"
    assert m.FinancialProject.get_by_id(PROJECT).po_high_water == 1
    m.PurchaseOrder.update(number="PO-101-0090").where(m.PurchaseOrder.number == "PO-101-0001").execute()
    assert create_po()["number"] == "PO-101-0002"  # the mark, not a scan, decides


def test_concurrent_creations_get_unique_numbers(fin):
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(3):
                results.append(create_po()["number"])
        except BaseException as exc:
            errors.append(exc)
        finally:
            m.database_proxy.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results) == [f"PO-101-{n:04d}" for n in range(1, 25)]


@pytest.mark.parametrize("status", PO_STATUSES)
def test_every_documented_status_is_accepted(fin, status):
    assert create_po(po_body(status=status))["status"] == status


def test_number_ids_may_be_any_whole_json_number(fin):
    body = po_body(vendor_id=7.0)
    body["line_items"][0]["cost_code_id"] = 3e0
    body["line_items"][0]["quantity"] = 2
    order = create_po(body)
    assert order["vendor"]["id"] == 7
    assert order["line_items"][0]["cost_code"]["id"] == 3


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("vendor_id", "7", "must be an integer"),
        ("cost_code_id", "3", "must be an integer"),
        ("quantity", "2", "must be a number"),
        ("commitment_id", 5001, "must be a string"),
        ("project_id", 101, "must be a string"),
        ("vendor_id", 7.5, "must be an integer"),
    ],
)
def test_ids_of_the_wrong_json_type_are_refused(fin, field, value, reason):
    body = po_body()
    target = body["line_items"][0] if field in ("cost_code_id", "quantity") else body
    target[field] = value
    with pytest.raises(InvalidInput) as caught:
        create_po(body)
    assert field in caught.value.message and reason in caught.value.message
    assert stored_orders() == (0, 0)


def test_local_caller_of_another_org_cannot_create(fin):
    with pytest.raises(NotFound, match="project 101 not found"):
        create_po(caller=Caller.local(GLOBEX_ORG))
    assert stored_orders() == (0, 0)


def test_viewer_cannot_create(fin):
    with pytest.raises(Forbidden):
        create_po(caller=Caller(user_id="v", organization_id=ORG, role="viewer"))


# --- purchase orders: validation, each field named ------------------------------------

TOP_FIELDS = ["project_id", "commitment_id", "title", "vendor_id", "status", "line_items"]
LINE_FIELDS = ["description", "amount", "cost_code_id"]


@pytest.mark.parametrize("field", TOP_FIELDS)
@pytest.mark.parametrize("how", ["absent", "null"])
def test_missing_required_field_is_named(fin, field, how):
    body = po_body()
    if how == "absent":
        del body[field]
    else:
        body[field] = None
    with pytest.raises(InvalidInput) as caught:
        create_po(body)
    message = caught.value.message
    if how == "absent":
        assert message == f"Missing required parameter {field}"
    else:
        assert message == f"Invalid parameter {field}: must not be null"
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize("field", LINE_FIELDS)
def test_missing_line_item_field_is_named(fin, field):
    body = po_body()
    del body["line_items"][1][field]
    with pytest.raises(InvalidInput) as caught:
        create_po(body)
    assert caught.value.message == f"Missing required parameter line_items[1].{field}"
    assert stored_orders() == (0, 0)


def test_every_missing_field_is_named_at_once(fin):
    with pytest.raises(InvalidInput) as caught:
        create_po({})
    assert caught.value.message == "; ".join(f"Missing required parameter {f}" for f in TOP_FIELDS)


@pytest.mark.parametrize(
    ("amount", "reason"),
    [
        (0.1, "not a JSON number"),
        (5, "not a JSON number"),
        (True, "must be a decimal string"),
        ("abc", "must be a decimal string"),
        ("NaN", "must be a decimal string"),
        ("Infinity", "must be a decimal string"),
        ("1e5", "must be a decimal string"),
        ("1,000.00", "must be a decimal string"),
        (" 1.00", "must be a decimal string"),
        ("+1.00", "must be a decimal string"),
        (".50", "must be a decimal string"),
        ("", "must be a decimal string"),
        ("-1.00", "must not be negative"),
        ("1.23456", "at most 4 digits after the decimal point"),
        ("1234567890123456", "at most 15 digits before the decimal point"),
    ],
)
def test_bad_amount_is_refused(fin, amount, reason):
    body = po_body()
    body["line_items"][1]["amount"] = amount
    with pytest.raises(InvalidInput) as caught:
        create_po(body)
    assert caught.value.message.startswith("Invalid parameter line_items[1].amount: ")
    assert reason in caught.value.message
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"unit_cost": 2.5}, "Invalid parameter line_items[0].unit_cost: must be a decimal string"),
        ({"unit_cost": "-1"}, "Invalid parameter line_items[0].unit_cost: must not be negative"),
        ({"quantity": -1}, "Invalid parameter line_items[0].quantity: must not be negative"),
        ({"quantity": "two"}, "Invalid parameter line_items[0].quantity: must be a number"),
        ({"quantity": None}, "Invalid parameter line_items[0].quantity: must not be null"),
        ({"cost_code_id": "three"}, "Invalid parameter line_items[0].cost_code_id: must be an integer"),
        ({"cost_code_id": 3.5}, "Invalid parameter line_items[0].cost_code_id: must be an integer"),
        ({"description": "   "}, "Invalid parameter line_items[0].description: must not be empty"),
        ({"description": 5}, "Invalid parameter line_items[0].description: must be a string"),
    ],
)
def test_bad_line_field_is_named(fin, changes, expected):
    body = po_body()
    body["line_items"][0].update(changes)
    with pytest.raises(InvalidInput) as caught:
        create_po(body)
    assert caught.value.message.startswith(expected)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"status": "bogus"}, "Invalid parameter status: must be one of: draft, pending"),
        ({"status": ""}, "Invalid parameter status: must be one of"),
        ({"status": "Draft"}, "Invalid parameter status: must be one of"),
        ({"title": ""}, "Invalid parameter title: must not be empty"),
        ({"vendor_id": "seven"}, "Invalid parameter vendor_id: must be an integer"),
        ({"vendor_id": True}, "Invalid parameter vendor_id: must be an integer"),
        ({"project_id": 101}, "Invalid parameter project_id: must be a string"),
        ({"project_id": None}, "Invalid parameter project_id: must not be null"),
        ({"project_id": ""}, "Invalid parameter project_id: must be a non-empty id"),
        ({"commitment_id": ["5001"]}, "Invalid parameter commitment_id: must be a string"),
        ({"line_items": []}, "Invalid parameter line_items: must contain at least one line item"),
        ({"line_items": "x"}, "Invalid parameter line_items: "),
        ({"line_items": ["x"]}, "Invalid parameter line_items[0]: must be an object"),
    ],
)
def test_bad_top_level_field_is_named(fin, changes, expected):
    with pytest.raises(InvalidInput) as caught:
        create_po(po_body(**changes))
    assert caught.value.message.startswith(expected)


def test_body_must_be_an_object(fin):
    with pytest.raises(InvalidInput, match="JSON object"):
        create_po([po_body()])


# --- purchase orders: references must be in the project's company (404) -----------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"vendor_id": 9}, "vendor 9 not found"),  # another company of the same organization
        ({"vendor_id": 20}, "vendor 20 not found"),  # another organization
        ({"vendor_id": 12345}, "vendor 12345 not found"),
        ({"commitment_id": "5002"}, "commitment 5002 not found in project 101"),  # project 102's
        ({"commitment_id": "6001"}, "commitment 6001 not found in project 101"),
        ({"commitment_id": "nope"}, "commitment nope not found in project 101"),
        ({"project_id": "103"}, "project 103 not found"),  # scoped to comp-acme-llc below
        ({"project_id": "999"}, "project 999 not found"),
        # project_id is a string: one that is no project number names no project either
        ({"project_id": "abc"}, "project abc not found"),
        ({"project_id": "Tower A"}, "project Tower A not found"),
        ({"project_id": "-101"}, "project -101 not found"),
        ({"project_id": "101.0"}, "project 101.0 not found"),
        ({"project_id": " 101"}, "project  101 not found"),
        ({"project_id": "\u0661\u0660\u0661"}, "project \u0661\u0660\u0661 not found"),  # Arabic-Indic digits
        ({"project_id": "9" * 30}, f"project {'9' * 30} not found"),  # past the largest id
    ],
)
def test_unknown_reference_is_not_found_and_nothing_is_written(fin, changes, expected):
    with pytest.raises(NotFound) as caught:
        create_po(po_body(**changes), caller=ACME_MEMBER, company_id=COMPANY)
    assert caught.value.message == expected
    assert stored_orders() == (0, 0)


@pytest.mark.parametrize("cost_code", [5, 30, 777])
def test_one_bad_cost_code_leaves_no_order_and_no_lines(fin, cost_code):
    body = po_body()
    body["line_items"].append({"description": "bad", "amount": "1.00", "cost_code_id": cost_code})
    with pytest.raises(NotFound) as caught:
        create_po(body)
    assert caught.value.message == f"cost code {cost_code} not found (line_items[2].cost_code_id)"
    assert stored_orders() == (0, 0)
    assert create_po()["number"] == "PO-101-0001"  # no number was used up


def test_one_invalid_line_item_leaves_nothing_behind(fin):
    body = po_body()
    body["line_items"].append({"description": "bad", "amount": "12.3.4", "cost_code_id": 3})
    with pytest.raises(InvalidInput, match=r"line_items\[2\]\.amount"):
        create_po(body)
    assert stored_orders() == (0, 0)


def test_failure_while_writing_lines_rolls_back_the_order(fin, monkeypatch):
    original = m.PurchaseOrderLine.create
    calls = []

    def failing_create(**fields):
        calls.append(fields)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(**fields)

    monkeypatch.setattr(m.PurchaseOrderLine, "create", failing_create)
    with pytest.raises(RuntimeError):
        create_po()
    monkeypatch.undo()
    assert stored_orders() == (0, 0)


def test_local_mode_infers_the_company(fin):
    assert create_po(company_id=None, caller=Caller.local(ORG))["number"] == "PO-101-0001"


# --- purchase orders: listing -------------------------------------------------------------


def test_list_purchase_orders_in_creation_order_and_scoped(fin):
    first = create_po()
    second = create_po(po_body(title="Second", status="issued"))
    create_po(po_body(project_id="102", commitment_id="5002", vendor_id=8))
    listed = api("finance.list_pos", {"project_id": "101"}, caller=ACME_MEMBER, company_id=COMPANY)
    assert listed == {"data": [first, second]}
    with pytest.raises(NotFound):
        api("finance.list_pos", {"project_id": "101"}, caller=Caller.local(GLOBEX_ORG))


# --- external scope (the server's Group B helper) ---------------------------------------


def key_of(org: str) -> m.ApiKey:
    return m.ApiKey.get(m.ApiKey.organization == org)


def test_resolve_returns_member_caller_and_company(fin):
    caller, company = external_scope.resolve(key_of(ORG), ORG, COMPANY)
    assert caller == Caller(user_id=None, organization_id=ORG, role="member")
    assert company == COMPANY
    assert external_scope.resolve(key_of(ORG), f" {ORG} ", OTHER_COMPANY)[1] == OTHER_COMPANY


@pytest.mark.parametrize(
    ("org", "company", "error", "expected"),
    [
        (None, COMPANY, InvalidInput, "Missing required header x-organization-id"),
        ("  ", COMPANY, InvalidInput, "Missing required header x-organization-id"),
        (ORG, None, InvalidInput, "Missing required header x-company-id"),
        (ORG, "", InvalidInput, "Missing required header x-company-id"),
        (GLOBEX_ORG, GLOBEX_COMPANY, NotFound, "organization org-globex not found"),
        ("org-nope", COMPANY, NotFound, "organization org-nope not found"),
        (ORG, GLOBEX_COMPANY, NotFound, "company comp-globex not found"),
        (ORG, "comp-nope", NotFound, "company comp-nope not found"),
    ],
)
def test_resolve_refuses_wrong_scope(fin, org, company, error, expected):
    with pytest.raises(error) as caught:
        external_scope.resolve(key_of(ORG), org, company)
    assert caught.value.message.startswith(expected)


# --- money helpers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [("30", "30.00"), ("30.5", "30.50"), ("30.125", "30.125"), ("30.1000", "30.10"), ("-0.00", "0.00")],
)
def test_money_strings_have_at_least_two_decimals(value, text):
    assert money.to_string(Decimal(value)) == text


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("0.30", 0.3),
        ("-50000.10", -50000.1),
        ("9999999999999.99", 9999999999999.99),
        ("12345678901234567890", 12345678901234567890),  # integral: an exact JSON integer
        ("-0.00", 0.0),
    ],
)
def test_money_numbers_keep_their_digits(value, number):
    result = money.to_number(Decimal(value))
    assert result == number and type(result) is type(number)
    assert json.dumps(result) == json.dumps(number)


@given(st.decimals(min_value=-(10**13), max_value=10**13, places=2, allow_nan=False))
def test_json_numbers_round_trip_exactly_up_to_15_digits(value):
    assert Decimal(json.dumps(money.to_number(value))) == value


# --- the demo dataset through the importer ---------------------------------------------


def test_demo_dataset_answers_as_it_was_written(db):
    import datetime

    from sowctl.services.dataset import import_dataset
    from sowctl.services.demo_data import DEMO_COMPANY, DEMO_ORG, demo_dataset

    data = demo_dataset(datetime.date(2026, 3, 16))
    import_dataset(data)
    acme = Caller(user_id=None, organization_id=DEMO_ORG, role="member")

    def call(name, query=None, body=None):
        return api(name, query, body, caller=acme, company_id=DEMO_COMPANY)

    demo_snapshot = next(s for s in data["budgetViewSnapshots"] if s["id"] == 21)
    detail = call("finance.snapshot", {"project_id": "101", "snapshot_id": "21"})["data"]
    assert detail["line_items"] == demo_snapshot["line_items"]
    for key, value in detail["totals"].items():
        column = sum(Decimal(repr(line[key])) for line in demo_snapshot["line_items"])
        assert Decimal(repr(value)) == column, key

    demo_contract = next(c for c in data["primeContracts"] if c["id"] == 31)
    assert call("finance.prime_contract", {"project_id": "101", "prime_contract_id": "31"}) == {
        "data": [demo_contract]
    }

    demo_orders = [
        {k: v for k, v in order.items() if k not in ("project_id", "commitment_id")}
        for order in data["purchaseOrders"]
        if order["project_id"] == 101
    ]
    assert call("finance.list_pos", {"project_id": "101"}) == {"data": demo_orders}
    order = call("finance.create_po", body=po_body())
    assert order["number"] == "PO-101-0003"
    assert order["id"] > max(o["id"] for o in demo_orders)
