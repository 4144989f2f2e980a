"""Dataset import and export: round trip, all or nothing, clear errors.

Every refused import is checked twice: the message names the record and the field,
and the database is exactly as it was before (every row of every table compared).
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sowctl
from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, Issue
from sowctl.services import credentials
from sowctl.services.access import Caller
from sowctl.services.dataset import export_dataset, import_dataset
from sowctl.services.dataset.validation import validate_dataset
from sowctl.services.demo_data import DEMO_SOW, demo_dataset
from sowctl.storage import models as m
from tests.support.dataset import DATA_MODELS, database_rows, minimal, wipe
from tests.support.doubles import dataset

TODAY = datetime.date(2026, 3, 16)
NOW = datetime.datetime(2026, 3, 16, 12, 0, 0)


@pytest.fixture
def demo() -> dict[str, Any]:
    return demo_dataset(TODAY)


@pytest.fixture(autouse=True)
def fixed_clock() -> None:
    clock.set_fixed_now(NOW)


def refused(data: dict[str, Any]) -> InvalidInput:
    """Import ``data``, expect a refusal, and check that the database did not change."""
    before = database_rows()
    with pytest.raises(InvalidInput) as caught:
        import_dataset(data)
    assert database_rows() == before
    return caught.value


# --- round trip -------------------------------------------------------------------


def api_responses() -> dict[str, Any]:
    """Responses of the API over the demo data, Groups A, B and C (local mode, full rights)."""
    local = Caller.local()
    call = operations.call_local
    responses: dict[str, Any] = {
        "deps": call("deps.list", local),
        "projects": call("projects.list", local),
        "clients": call("clients.list", local),
    }
    for sow in ("sow-tower-a-ph1", "sow-harbor-fitout", "sow-globex-dc-ph1"):
        responses[f"items {sow}"] = call("items.list", local, {"sowId": sow})
        responses[f"chain {sow}"] = call("chain.get", local, query={"sowId": sow})
    responses["views"] = call("finance.budget_views", local, query={"project_id": "101"})
    responses["snapshot"] = call("finance.snapshot", local, query={"project_id": "101", "snapshot_id": "21"})
    responses["contract"] = call(
        "finance.prime_contract", local, query={"project_id": "101", "prime_contract_id": "31"}
    )
    return responses


def test_round_trip_gives_identical_json_and_the_same_api_responses(db, demo: dict[str, Any]) -> None:
    counts = import_dataset(demo)
    first = export_dataset()
    responses = api_responses()
    text = json.dumps(first, indent=2)

    wipe()
    assert database_rows() == {model.__name__: [] for model in DATA_MODELS}
    assert import_dataset(json.loads(text)) == counts
    assert json.dumps(export_dataset(), indent=2) == text
    assert api_responses() == responses


def test_export_keeps_every_record_and_its_fields(db, demo: dict[str, Any]) -> None:
    import_dataset(demo)
    exported = export_dataset()
    assert list(exported) == list(demo)
    for kind, records in demo.items():
        assert [r["id"] for r in exported[kind]] == sorted(r["id"] for r in records), kind
        by_id = {r["id"]: r for r in exported[kind]}
        for record in records:
            for key, value in record.items():
                if key in ("contacts", "line_items"):
                    continue
                assert by_id[record["id"]][key] == value, (kind, record["id"], key)
    # Nested records: contacts by id, snapshot lines and purchase-order lines in file order.
    demo_client = demo["clients"][0]
    client = next(c for c in exported["clients"] if c["id"] == demo_client["id"])
    assert client["contacts"] == sorted(demo_client["contacts"], key=lambda c: c["id"])
    for kind in ("budgetViewSnapshots", "purchaseOrders"):
        for record in demo[kind]:
            lines = next(r for r in exported[kind] if r["id"] == record["id"])["line_items"]
            assert [line["id"] for line in lines] == [line["id"] for line in record["line_items"]]
    line = exported["purchaseOrders"][0]["line_items"][0]
    assert line == {**demo["purchaseOrders"][0]["line_items"][0], "quantity": None, "unit_cost": None}
    # Missing timestamps were set at import time; an un-updated dependency has no updatedAt.
    assert {s["createdAt"] for s in exported["sows"]} == {"2026-03-16T12:00:00Z"}
    assert exported["purchaseOrders"][0]["created_at"] == "2026-03-16T12:00:00Z"
    internal = next(d for d in exported["dependencies"] if d["id"] == "dep-002")
    assert internal["updatedAt"] is None and internal["externalTarget"] is None


def test_export_holds_no_credentials(db, demo: dict[str, Any]) -> None:
    import_dataset(demo)
    token = credentials.create_token("user-ada", "org-acme", "admin")
    key = credentials.create_key("org-acme")
    text = json.dumps(export_dataset())
    for secret in (token.secret, key.secret, credentials.hash_secret(token.secret)):
        assert secret not in text
    assert m.ApiToken.select().count() == 1  # still there; just not exported


def test_import_fills_the_ordering_edges(db, demo: dict[str, Any]) -> None:
    import_dataset(demo)
    edges = {d.id: (d.before_item_id, d.after_item_id, d.sow_id) for d in m.Dependency.select()}
    assert edges["dep-001"] == ("item-006", "item-007", DEMO_SOW)  # depends_on: target first
    assert edges["dep-003"] == ("item-002", "item-007", DEMO_SOW)  # blocks: source first
    assert edges["dep-005"][:2] == (None, None)  # related_to
    assert edges["dep-008"][:2] == (None, None)  # cancelled
    assert edges["dep-009"][:2] == (None, None)  # external


def test_missing_values_get_the_api_defaults(db) -> None:
    data = minimal()
    task = {"sowId": "sow-1", "type": "task_item", "parentItemId": "req-1"}
    data["items"].append({**task, "id": "task-3", "title": "Later", "orderIndex": 7})
    data["items"].append({**task, "id": "task-4", "title": "Last"})
    import_dataset(data)
    items = {item.id: item for item in m.Item.select()}
    order = [items[i].order_index for i in ("req-1", "task-1", "task-2", "task-3", "task-4")]
    assert order == [0, 0, 1, 7, 8]
    assert items["task-1"].status == "pending"
    assert items["task-1"].created_at == items["task-1"].updated_at == NOW
    dep = m.Dependency.get_by_id("dep-1")
    assert (dep.status, dep.is_external, dep.created_at, dep.updated_at) == ("active", False, NOW, None)
    contact = m.Contact.get_by_id("00000000-0000-4000-8000-00000000d001")
    assert contact.client_id == "00000000-0000-4000-8000-00000000c001" and contact.is_primary is False


def test_children_may_come_before_their_parents(db) -> None:
    data = minimal()
    data["items"].reverse()
    import_dataset(data)
    assert m.Item.get_by_id("task-1").parent_id == "req-1"


def test_dependency_cycles_are_imported_and_reported_by_the_chain(db) -> None:
    data = minimal()
    reverse = {"id": "dep-2", "sourceItemId": "task-1", "targetItemId": "task-2"}
    data["dependencies"].append({**reverse, "dependencyType": "depends_on", "riskLevel": "low"})
    import_dataset(data)
    chain = operations.call_local("chain.get", Caller.local(), query={"sowId": "sow-1"})
    assert chain["issues"]["circular"]


def test_import_adds_to_existing_records(db) -> None:
    import_dataset(minimal())
    task = {"id": "task-9", "sowId": "sow-1", "title": "Nine", "type": "task_item", "parentItemId": "req-1"}
    dependency = {"id": "dep-9", "sourceItemId": "task-9", "targetItemId": "task-1"}
    more = {
        "items": [task],
        "dependencies": [{**dependency, "dependencyType": "blocks", "riskLevel": "high"}],
    }
    counts = import_dataset(more)
    assert counts["items"] == 1 and counts["dependencies"] == 1
    assert m.Item.get_by_id("task-9").order_index == 2  # after task-1 and task-2 already stored
    assert m.Dependency.get_by_id("dep-9").before_item_id == "task-9"


def test_purchase_order_defaults(db, demo: dict[str, Any]) -> None:
    order = demo["purchaseOrders"][0]
    for key in ("original_amount", "revised_amount", "total_amount"):
        del order[key]
    del order["line_items"][0]["id"]
    order["line_items"][1]["quantity"] = 3
    order["line_items"][1]["unit_cost"] = "4291.83"
    import_dataset(demo)
    exported = next(po for po in export_dataset()["purchaseOrders"] if po["id"] == order["id"])
    assert exported["total_amount"] == exported["original_amount"] == "62625.50"
    assert [line["id"] for line in exported["line_items"]] == [6, 2, 3]  # one past the largest line id
    assert (exported["line_items"][1]["quantity"], exported["line_items"][1]["unit_cost"]) == (3, "4291.83")


def test_purchase_order_numbers_continue_above_imported_ones(db, demo: dict[str, Any]) -> None:
    from sowctl.schemas.purchase_orders import PurchaseOrderIn
    from sowctl.services import purchase_orders
    from sowctl.services.access import Caller

    import_dataset(demo)
    order = demo["purchaseOrders"][0]
    project, caller = int(order["project_id"]), Caller.local()
    body = PurchaseOrderIn.model_validate(
        {
            "project_id": str(project),
            "commitment_id": str(order["commitment_id"]),
            "vendor_id": order["vendor"]["id"],
            "title": "next",
            "status": "draft",
            "line_items": [
                {
                    "description": "x",
                    "amount": "1.00",
                    "cost_code_id": order["line_items"][0]["cost_code"]["id"],
                }
            ],
        }
    )
    first = purchase_orders.create_purchase_order(caller, None, body).number
    later = {**order, "id": 99_999, "number": f"PO-{project}-0950", "line_items": []}
    import_dataset({"purchaseOrders": [later]})
    assert purchase_orders.create_purchase_order(caller, None, body).number == f"PO-{project}-0951"
    assert first != f"PO-{project}-0951"


# --- refusals: all or nothing, naming record and field ---------------------------


def test_a_bad_record_late_in_the_file_writes_nothing(db, demo: dict[str, Any]) -> None:
    import_dataset(minimal())
    demo["purchaseOrders"][-1]["line_items"][-1]["cost_code"]["id"] = 999
    error = refused(demo)
    assert error.message == (
        "purchaseOrders[1] (id 9002): line_items[1].cost_code.id: cost code 999 not found"
    )
    assert error.issues[0].as_dict() == {
        "path": ["purchaseOrders", 1, "line_items[1].cost_code.id"],
        "message": "cost code 999 not found",
    }


def test_a_refused_import_into_an_empty_database_leaves_it_empty(db, demo: dict[str, Any]) -> None:
    demo["dependencies"][-1]["targetItemId"] = "item-404"
    refused(demo)
    assert all(model.select().count() == 0 for model in DATA_MODELS)


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation of the minimal dataset: "items.1.parentItemId" = value."""

    def mutate(data: dict) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return mutate


REFERENCE_ERRORS = [
    ("users.0.organizationId", "org-x", "organization org-x not found"),
    ("clients.0.organizationId", "org-x", "organization org-x not found"),
    ("projects.0.organizationId", "org-x", "organization org-x not found"),
    (
        "projects.0.clientId",
        "00000000-0000-4000-8000-00000000c0ff",
        "client 00000000-0000-4000-8000-00000000c0ff not found",
    ),
    (
        "projects.0.contactId",
        "00000000-0000-4000-8000-00000000d0ff",
        "contact 00000000-0000-4000-8000-00000000d0ff not found",
    ),
    ("sows.0.projectId", "project-x", "project project-x not found"),
    ("items.1.sowId", "sow-x", "SOW sow-x not found"),
    ("items.1.parentItemId", "item-9", "item item-9 not found"),
    ("dependencies.0.sourceItemId", "item-x", "item item-x not found"),
    ("dependencies.0.targetItemId", "item-x", "item item-x not found"),
    ("dependencies.0.targetItemId", "task-2", "an item cannot depend on itself"),
    (
        "dependencies.0.targetItemId",
        None,
        "is required for an internal dependency "
        "(for an external one send isExternal: true and externalTarget)",
    ),
]


def expected(data: dict, path: str, message: str) -> str:
    """The full message for the record at ``path``: "items[1] (id task-1): sowId: ..."."""
    kind, index, field = path.split(".")
    return f"{kind}[{index}] (id {data[kind][int(index)]['id']}): {field}: {message}"


@pytest.mark.parametrize(("path", "value", "message"), REFERENCE_ERRORS)
def test_group_ac_reference_errors_name_record_and_field(db, path: str, value: Any, message: str) -> None:
    data = minimal()
    _set(path, value)(data)
    error = refused(data)
    assert error.message == expected(data, path, message)  # and no follow-on problems
    kind, index, field = path.split(".")
    assert error.issues == [Issue((kind, int(index), field), message)]


def test_external_dependency_has_no_target_item(db) -> None:
    data = minimal()
    data["dependencies"][0].update(isExternal=True, externalTarget="Steel mill")
    error = refused(data)
    assert (
        error.message == "dependencies[0] (id dep-1): targetItemId: must be null for an external dependency"
    )


def test_external_dependency_needs_an_external_target(db) -> None:
    data = minimal()
    data["dependencies"][0].update(isExternal=True, targetItemId=None)
    error = refused(data)
    assert (
        error.message == "dependencies[0] (id dep-1): externalTarget: is required for an external dependency"
    )


def test_an_internal_dependency_with_an_external_target_is_refused_as_the_api_refuses_it(db) -> None:
    data = minimal()
    data["dependencies"][0].update(isExternal=False, externalTarget="Steel mill")
    error = refused(data)
    assert error.message == (
        "dependencies[0] (id dep-1): externalTarget: "
        "is only allowed on an external dependency (isExternal: true)"
    )
    assert m.Dependency.select().count() == 0


def test_an_external_target_without_is_external_is_external_as_in_the_api(db) -> None:
    data = minimal()
    data["dependencies"][0].pop("targetItemId")
    data["dependencies"][0].pop("isExternal", None)
    data["dependencies"][0]["externalTarget"] = "Steel mill"
    import_dataset(data)
    dep = m.Dependency.get_by_id("dep-1")
    assert (dep.is_external, dep.target_item_id, dep.external_target) == (True, None, "Steel mill")


def test_references_across_organizations_are_refused(db) -> None:
    data = minimal()
    data["organizations"].append({"id": "org-2", "name": "Other"})
    data["clients"].append(
        {"id": "00000000-0000-4000-8000-00000000c002", "organizationId": "org-2", "name": "Theirs"}
    )
    data["projects"][0]["clientId"] = "00000000-0000-4000-8000-00000000c002"
    data["projects"][0]["contactId"] = None
    error = refused(data)
    assert error.message == (
        "projects[0] (id 00000000-0000-4000-8000-00000000a001): clientId: client "
        "00000000-0000-4000-8000-00000000c002 belongs to organization org-2, not org-1"
    )


GROUP_B_ERRORS = [
    ("companies", 0, "organizationId", "org-x", "organization org-x not found"),
    ("financialProjects", 0, "companyId", "comp-x", "company comp-x not found"),
    ("financialProjects", 0, "projectId", "project-x", "project project-x not found"),
    ("vendors", 0, "companyId", "comp-x", "company comp-x not found"),
    ("costCodes", 0, "companyId", "comp-x", "company comp-x not found"),
    ("commitments", 0, "project_id", 999, "project 999 not found"),
    ("commitments", 0, "vendor_id", 999, "vendor 999 not found"),
    ("budgetViews", 0, "project_id", 999, "project 999 not found"),
    ("budgetViewSnapshots", 0, "budget_view_id", 999, "budget view 999 not found"),
    ("primeContracts", 0, "project_id", 999, "project 999 not found"),
    ("purchaseOrders", 0, "commitment_id", "404", "commitment 404 not found"),
    ("purchaseOrders", 0, "project_id", 999, "project 999 not found"),
]


@pytest.mark.parametrize(("kind", "index", "field", "value", "message"), GROUP_B_ERRORS)
def test_group_b_reference_errors_name_record_and_field(
    db, demo: dict[str, Any], kind: str, index: int, field: str, value: Any, message: str
) -> None:
    record = demo[kind][index]
    record[field] = value
    error = refused(demo)
    assert error.message.startswith(f"{kind}[{index}] (id {record['id']}): {field}: {message}")


def test_purchase_order_vendor_of_another_company_is_refused(db, demo: dict[str, Any]) -> None:
    globex_vendor = next(v for v in demo["vendors"] if v["companyId"] != "comp-acme-llc")
    demo["purchaseOrders"][0]["vendor"]["id"] = globex_vendor["id"]
    error = refused(demo)
    vendor = globex_vendor["id"]
    assert error.message == (
        f"purchaseOrders[0] (id 9001): vendor.id: vendor {vendor} is not a vendor of the project's company"
    )


# --- hierarchy --------------------------------------------------------------------


def test_a_task_item_cannot_contain_a_requirement(db) -> None:
    data = minimal()
    bad = {"id": "req-2", "sowId": "sow-1", "title": "Bad", "type": "requirement", "parentItemId": "task-1"}
    data["items"].append(bad)
    error = refused(data)
    assert error.message == (
        "items[3] (id req-2): parentItemId: a task item cannot contain a requirement (task-1 is a task_item)"
    )


def test_a_parent_loop_is_refused_and_shown(db) -> None:
    data = minimal()
    data["items"][0]["parentItemId"] = "task-2"  # req-1 -> task-2 -> req-1
    data["items"][0]["type"] = "task_item"
    error = refused(data)
    assert (
        error.message == "items[0] (id req-1): parentItemId: circular parent chain: req-1 -> task-2 -> req-1"
    )


def test_an_item_cannot_be_its_own_parent(db) -> None:
    data = minimal()
    data["items"][1]["parentItemId"] = "task-1"
    error = refused(data)
    assert error.message == "items[1] (id task-1): parentItemId: an item cannot be its own parent"


def test_a_parent_in_another_sow_is_refused(db) -> None:
    data = minimal()
    data["sows"].append({"id": "sow-2", "projectId": "00000000-0000-4000-8000-00000000a001"})
    data["items"][2]["sowId"] = "sow-2"
    data["dependencies"] = []
    error = refused(data)
    assert error.message == "items[2] (id task-2): parentItemId: parent item req-1 is in SOW sow-1, not sow-2"


# --- ids ----------------------------------------------------------------------------


def test_duplicate_ids_in_the_file_are_refused(db) -> None:
    data = minimal()
    data["items"].append(copy.deepcopy(data["items"][1]))
    error = refused(data)
    assert error.message == "items[3] (id task-1): id: duplicate id (also items[1])"


def test_duplicate_contact_ids_are_refused(db) -> None:
    data = minimal()
    data["clients"][0]["contacts"].append({"id": "00000000-0000-4000-8000-00000000d001", "name": "Twin"})
    error = refused(data)
    assert error.message == (
        "clients[0] (id 00000000-0000-4000-8000-00000000c001): contacts[1].id: "
        "duplicate contact id (also clients[0].contacts[0])"
    )


def test_ids_already_in_the_database_are_refused(db) -> None:
    import_dataset(minimal())
    again = {"items": [{"id": "task-1", "sowId": "sow-1", "title": "Again", "type": "task_item"}]}
    error = refused(again)
    assert error.message == "items[0] (id task-1): id: item task-1 already exists in the database"


def test_every_problem_is_listed(db) -> None:
    data = minimal()
    data["items"][1]["sowId"] = "sow-x"
    data["items"][2]["sowId"] = "sow-y"
    error = refused(data)
    assert error.message.endswith("(and 1 more problem)")
    assert [issue.path for issue in error.issues] == [("items", 1, "sowId"), ("items", 2, "sowId")]


# --- field validation ---------------------------------------------------------------


FIELD_ERRORS = [
    ("items.1.orderIndex", "first", "must be an integer"),
    ("items.1.type", "epic", "must be one of: requirement, task_item"),
    ("items.1.title", 42, "must be a string"),
    ("items.1.createdAt", "yesterday", "must be a timestamp in the form YYYY-MM-DDThh:mm:ssZ"),
    ("dependencies.0.riskLevel", "extreme", "must be one of: low, medium, high, critical"),
    ("dependencies.0.slaDate", "2026-02-30", "must be a valid calendar date (YYYY-MM-DD)"),
    ("dependencies.0.isExternal", "no", "must be a boolean"),
    ("projects.0.status", "paused", "must be one of: active, on_hold, completed, archived"),
    ("clients.0.isPinned", 1, "must be a boolean"),
]


@pytest.mark.parametrize(("path", "value", "message"), FIELD_ERRORS)
def test_wrong_field_values_name_record_and_field(db, path: str, value: Any, message: str) -> None:
    data = minimal()
    _set(path, value)(data)
    assert refused(data).message == expected(data, path, message)


def test_a_missing_required_field_is_named(db) -> None:
    data = minimal()
    del data["items"][2]["title"]
    assert refused(data).message == "items[2] (id task-2): title: is required"


def test_a_prime_contract_needs_its_title_status_and_amounts(db, demo: dict[str, Any]) -> None:
    """An import invents none of them (it gave "", "Active" and 0.0)."""
    minimal_contract = {"id": 31, "project_id": demo["primeContracts"][0]["project_id"]}
    data = {**demo, "primeContracts": [minimal_contract]}
    issues = {issue.path for issue in refused(data).issues}
    required = {"title", "status", "original_contract_value", "current_contract_value"}
    required |= {"executed_change_orders_value", "pending_change_orders_value"}
    assert issues == {("primeContracts", 0, name) for name in required}


def test_nested_fields_are_named_with_their_path(db, demo: dict[str, Any]) -> None:
    demo["clients"][1]["contacts"][0]["isPrimary"] = "yes"
    demo["budgetViewSnapshots"][0]["line_items"][2]["spent"] = "a lot"
    error = refused(demo)
    paths = [issue.path for issue in error.issues]
    assert ("clients", 1, "contacts[0].isPrimary") in paths
    assert ("budgetViewSnapshots", 0, "line_items[2].spent") in paths


def test_purchase_order_amounts_must_be_decimal_strings(db, demo: dict[str, Any]) -> None:
    demo["purchaseOrders"][0]["line_items"][0]["amount"] = 48250.0
    assert refused(demo).message == (
        "purchaseOrders[0] (id 9001): line_items[0].amount: "
        'must be a decimal string such as "48250.00", not a JSON number'
    )


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("amount", "-5", "must not be negative"),
        ("amount", "1.123456", "at most 4"),
        ("unit_cost", "-1.00", "must not be negative"),
    ],
)
def test_purchase_order_lines_are_refused_as_the_api_refuses_them(
    db, demo: dict[str, Any], field: str, value: str, problem: str
) -> None:
    demo["purchaseOrders"][0]["line_items"][0][field] = value
    message = refused(demo).message
    assert message.startswith(f"purchaseOrders[0] (id 9001): line_items[0].{field}: ") and problem in message
    assert m.PurchaseOrder.select().count() == 0  # all or nothing


def test_an_integer_too_long_for_python_is_named_by_record_and_field(
    db, cli, tmp_path: Path, demo: dict[str, Any]
) -> None:
    from sowctl.foundation import json_input

    demo["items"][1]["orderIndex"] = "@NUMBER@"
    text = json.dumps(demo).replace('"@NUMBER@"', "-" + "9" * 5000)
    problem = (
        "items[1] (id item-002): orderIndex: must be a number of at most 4300 digits (this one has 5000)"
    )
    assert refused(json_input.loads(text)).message == problem  # a dataset given already parsed
    (tmp_path / "data.json").write_text(text, encoding="utf-8")
    result = cli("import", tmp_path / "data.json")
    assert (result.exit_code, result.stderr) == (2, f"error: {problem}\n")


@pytest.mark.parametrize("status", ["weird", "", "Draft"])
def test_a_purchase_order_status_the_api_refuses_is_refused(db, demo: dict[str, Any], status: str) -> None:
    from sowctl.schemas.vocabulary import PO_STATUSES

    demo["purchaseOrders"][0]["status"] = status
    assert refused(demo).message.startswith(
        f"purchaseOrders[0] (id 9001): status: must be one of: {', '.join(PO_STATUSES)}"
    )
    assert m.PurchaseOrder.select().count() == 0


@pytest.mark.parametrize("status", ["approved", "void"])
def test_every_status_the_api_takes_imports(db, demo: dict[str, Any], status: str) -> None:
    demo["purchaseOrders"][0]["status"] = status
    import_dataset(demo)
    assert m.PurchaseOrder.get_by_id(9001).status == status


def test_a_dependency_contact_email_is_checked_as_the_api_checks_it(db, demo: dict[str, Any]) -> None:
    demo["dependencies"][0]["contactEmail"] = "nope"
    assert "contactEmail: must be an e-mail address" in refused(demo).message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a dataset must be a JSON object"),
        ({"item": []}, "unknown record kind 'item'"),
        ({"items": {"id": "x"}}, "items: must be an array of records"),
        ({"items": ["x"]}, "items[0]: must be an object"),
    ],
)
def test_the_file_shape_is_checked(db, data: Any, message: str) -> None:
    assert refused(data).message.startswith(message)


# --- CLI ----------------------------------------------------------------------------


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_cli_import_prints_a_summary_and_json(cli, tmp_path: Path, demo: dict[str, Any]) -> None:
    result = cli("import", write(tmp_path / "demo.json", demo))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "items\t25" in lines and "dependencies\t17" in lines and "contacts\t6" in lines
    assert all(line.split("\t")[1] != "0" for line in lines)

    again = cli(
        "import", "--json", write(tmp_path / "more.json", {"organizations": [{"id": "o", "name": "O"}]})
    )
    assert again.exit_code == 0
    assert again.json()["imported"]["organizations"] == 1
    assert again.json()["imported"]["items"] == 0


def test_cli_import_reads_stdin(cli, demo: dict[str, Any]) -> None:
    result = cli("import", "--json", "-", input=json.dumps(demo))
    assert result.exit_code == 0, result.stderr
    assert result.json()["imported"]["purchaseOrders"] == 2


def test_cli_malformed_json_exits_2_naming_line_and_column(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "items": [1,\n}\n', encoding="utf-8")
    result = cli("import", bad)
    assert result.exit_code == 2
    assert result.stderr == f"error: {bad} is not valid JSON: Expecting value at line 3, column 1\n"
    assert result.stdout == ""


def test_cli_invalid_record_exits_2_and_changes_nothing(cli, tmp_path: Path, demo: dict[str, Any]) -> None:
    assert cli("import", write(tmp_path / "min.json", minimal())).exit_code == 0
    demo["items"][5]["parentItemId"] = "item-404"
    result = cli("import", write(tmp_path / "demo.json", demo))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: items[5] (id item-006): parentItemId: item item-404 not found")
    exported = cli("export").json()
    assert [o["id"] for o in exported["organizations"]] == ["org-1"]


def test_cli_missing_file_exits_2(cli, tmp_path: Path) -> None:
    result = cli("import", tmp_path / "nope.json")
    assert result.exit_code == 2
    assert "cannot read" in result.stderr and "No such file" in result.stderr


def test_cli_import_refuses_a_misspelt_field_naming_record_and_field(cli, tmp_path: Path) -> None:
    data = dataset()
    data["items"][3]["parentItemID"] = data["items"][3].pop("parentItemId", None)
    result = cli("import", write(tmp_path / "data.json", data))
    assert result.exit_code == 2, result.stderr
    assert "items[3]" in result.stderr and "parentItemID: unknown field" in result.stderr
    assert cli("sows", "list").stdout.count("\n") <= 1  # nothing was imported


def test_the_shipped_demo_dataset_and_an_export_pass_validation(cli, tmp_path: Path) -> None:
    demo_file = Path(sowctl.__file__).parent / "data" / "demo.json"
    validate_dataset(json.loads(demo_file.read_text()))
    assert cli("import", str(demo_file)).exit_code == 0
    exported = tmp_path / "out.json"
    assert cli("export", str(exported)).exit_code == 0
    validate_dataset(json.loads(exported.read_text()))


@pytest.mark.parametrize("command", ["import", "export"])
def test_cli_admin_commands_refuse_server_mode(cli, tmp_path: Path, command: str) -> None:
    args = [command, write(tmp_path / "d.json", minimal())] if command == "import" else [command]
    result = cli("--server", "http://x", *args, env={"SOWCTL_DB": ""})
    assert result.exit_code == 2
    assert f"'sowctl {command}' needs direct database access" in result.stderr


def test_cli_export_to_stdout_and_to_a_file(cli, tmp_path: Path, demo: dict[str, Any]) -> None:
    assert cli("import", write(tmp_path / "demo.json", demo)).exit_code == 0
    to_stdout = cli("export")
    assert to_stdout.exit_code == 0
    assert to_stdout.stdout.startswith('{\n  "organizations": [')  # indented: a small dataset
    assert cli("export", "-").stdout == to_stdout.stdout

    target = tmp_path / "out" / "export.json"
    target.parent.mkdir()
    target.write_text("old content", encoding="utf-8")
    to_file = cli("export", target)
    assert to_file.exit_code == 0 and to_file.stdout == ""
    assert "exported" in to_file.stderr
    assert target.read_text(encoding="utf-8") == to_stdout.stdout
    assert [p.name for p in target.parent.iterdir()] == ["export.json"]  # no temp file left

    compact = cli("export", "--compact")
    assert json.loads(compact.stdout) == json.loads(to_stdout.stdout)
    assert "\n" not in compact.stdout.rstrip("\n")


def test_cli_export_to_a_missing_directory_exits_2(cli, db, tmp_path: Path) -> None:
    result = cli("export", tmp_path / "missing" / "x.json")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: cannot write")


def test_progress_is_reported_per_batch(db) -> None:
    data = minimal()
    task = {"sowId": "sow-1", "type": "task_item", "parentItemId": "req-1", "title": "T"}
    data["items"] += [{**task, "id": f"bulk-{n:04d}"} for n in range(2500)]
    calls: list[tuple[int, int]] = []
    import_dataset(data, progress=lambda done, total: calls.append((done, total)))
    total = 1 + 1 + 1 + 1 + 1 + 1 + 2503 + 1  # org, user, client, contact, project, sow, items, dependency
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) >= 4  # the items went in as several batches


def test_no_order_index_after_the_largest_one_is_refused(db) -> None:
    data = minimal()
    task = {"sowId": "sow-1", "type": "task_item", "parentItemId": "req-1"}
    data["items"].append({**task, "id": "task-max", "title": "Max", "orderIndex": 2**31 - 1})
    data["items"].append({**task, "id": "task-after", "title": "After"})
    with pytest.raises(InvalidInput) as info:
        import_dataset(data)
    assert info.value.message.startswith("items[")
    assert "(id task-after): orderIndex: must be given" in info.value.message
    assert m.Item.select().count() == 0
