"""Consistency checks for the demo dataset and the benchmark dataset generator.

Both produce the import format; an importer rejects a file with a
dangling reference, a hierarchy violation or a dependency cycle, so these tests
validate exactly those rules (plus money and timestamp shapes) without needing
a database.
"""

from __future__ import annotations

import copy
import datetime
import importlib.util
import json
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sowctl.services import demo_data
from sowctl.services.demo_data import (
    DEMO_COMPANY,
    DEMO_CRITICAL_DEPENDENCY,
    DEMO_ORG,
    DEMO_OVERDUE_DEPENDENCY,
    DEMO_PROJECT_ID,
    DEMO_SOW,
    DEMO_USER,
    demo_dataset,
)

TODAY = datetime.date(2026, 3, 16)

TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIMESTAMP_KEYS = {
    "createdAt",
    "updatedAt",
    "pinnedAt",
    "startDate",
    "endDate",
    "created_at",
    "updated_at",
    "contract_date",
    "start_date",
    "estimated_completion_date",
}
DATE_KEYS = {"slaDate", "escalationDate"}

DEP_TYPES = {"depends_on", "blocks", "related_to", "prerequisite", "successor"}
RISK_LEVELS = {"low", "medium", "high", "critical"}
DEP_STATUSES = {"active", "resolved", "cancelled", "blocked"}
ITEM_STATUSES = {"pending", "in_progress", "completed", "cancelled"}
PROJECT_STATUSES = {"active", "on_hold", "completed", "archived"}


# --------------------------------------------------------------------------- helpers


def load_generator() -> ModuleType:
    """Load bench/gen_dataset.py by path: bench/ is a scripts folder, not a package."""
    path = Path(__file__).resolve().parents[2] / "bench" / "gen_dataset.py"
    spec = importlib.util.spec_from_file_location("bench_gen_dataset", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def index(records: list[dict[str, Any]], what: str) -> dict[Any, dict[str, Any]]:
    """Map id -> record, failing on duplicate ids."""
    by_id: dict[Any, dict[str, Any]] = {}
    for record in records:
        assert record["id"] not in by_id, f"duplicate {what} id {record['id']!r}"
        by_id[record["id"]] = record
    return by_id


def check_group_ac_references(ds: dict[str, Any]) -> None:
    """Every Group A/C reference names a record of the dataset, in the same org."""
    orgs = index(ds.get("organizations", []), "organization")
    users = index(ds.get("users", []), "user")
    clients = index(ds.get("clients", []), "client")
    projects = index(ds.get("projects", []), "project")
    sows = index(ds.get("sows", []), "sow")
    items = index(ds.get("items", []), "item")
    index(ds.get("dependencies", []), "dependency")

    for user in users.values():
        assert user["organizationId"] in orgs, user
    contacts: dict[str, dict[str, Any]] = {}
    for client in clients.values():
        assert client["organizationId"] in orgs, client["id"]
        for contact in client["contacts"]:
            assert contact["id"] not in contacts, f"duplicate contact {contact['id']}"
            assert contact.get("clientId", client["id"]) == client["id"]
            contacts[contact["id"]] = {**contact, "clientId": client["id"]}
        assert sum(c["isPrimary"] for c in client["contacts"]) <= 1, client["id"]

    for project in projects.values():
        org = project["organizationId"]
        assert org in orgs, project["id"]
        assert project["status"] in PROJECT_STATUSES
        assert project["clientId"] in clients, project["id"]
        assert clients[project["clientId"]]["organizationId"] == org
        if project.get("contactId") is not None:
            assert contacts[project["contactId"]]["clientId"] == project["clientId"]
        assert users[project["ownerUserId"]]["organizationId"] == org

    def org_of_sow(sow_id: str) -> str:
        return projects[sows[sow_id]["projectId"]]["organizationId"]

    for sow in sows.values():
        assert sow["projectId"] in projects, sow["id"]

    for item in items.values():
        assert item["sowId"] in sows, item["id"]
        assert item["status"] in ITEM_STATUSES, item["id"]
        creator = item.get("createdByUserId")
        if creator is not None:
            assert users[creator]["organizationId"] == org_of_sow(item["sowId"]), item["id"]

    for dep in ds.get("dependencies", []):
        assert dep["dependencyType"] in DEP_TYPES, dep["id"]
        assert dep["riskLevel"] in RISK_LEVELS, dep["id"]
        assert dep["status"] in DEP_STATUSES, dep["id"]
        source = items[dep["sourceItemId"]]
        if dep["isExternal"]:
            assert dep["targetItemId"] is None, dep["id"]
            assert dep["externalTarget"], dep["id"]
        else:
            assert dep.get("externalTarget") is None, dep["id"]
            target = items[dep["targetItemId"]]
            assert target["id"] != source["id"], f"self dependency {dep['id']}"
            # Chains are per SOW, and an org must never reach into another org.
            assert target["sowId"] == source["sowId"], dep["id"]
        creator = dep.get("createdByUserId")
        if creator is not None:
            assert users[creator]["organizationId"] == org_of_sow(source["sowId"]), dep["id"]


def check_hierarchy(items: list[dict[str, Any]]) -> None:
    """Hierarchy rules: parents exist earlier in the file, in the same SOW;
    task items contain only task items; orderIndex is 0..n-1 per sibling level."""
    seen: dict[str, dict[str, Any]] = {}
    levels: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for item in items:
        assert item["type"] in {"requirement", "task_item"}, item["id"]
        parent_id = item["parentItemId"]
        if parent_id is not None:
            # Parents first: lets an importer insert in file order, and rules out
            # circular parent chains.
            assert parent_id in seen, f"{item['id']}: parent {parent_id} not defined before"
            parent = seen[parent_id]
            assert parent["sowId"] == item["sowId"], item["id"]
            if parent["type"] == "task_item":
                assert item["type"] == "task_item", f"{item['id']}: requirement under a task"
        levels[(item["sowId"], parent_id)].append(item["orderIndex"])
        seen[item["id"]] = item
    for level, indexes in levels.items():
        assert sorted(indexes) == list(range(len(indexes))), level


def expected_requirement_status(item_id: str, items: list[dict[str, Any]]) -> str:
    """Requirement status per the status rule, from all descendant task items."""
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_id = {i["id"]: i for i in items}
    for item in items:
        if item["parentItemId"] is not None:
            children[item["parentItemId"]].append(item)
    statuses: list[str] = []
    stack = list(children[item_id])
    while stack:
        child = stack.pop()
        if child["type"] == "task_item":
            statuses.append(child["status"])
        stack.extend(children[child["id"]])
    if not statuses:
        return by_id[item_id]["status"]
    live = [s for s in statuses if s != "cancelled"]
    if not live:
        return "cancelled"
    if all(s == "completed" for s in live):
        return "completed"
    if all(s == "pending" for s in live):
        return "pending"
    return "in_progress"


def ordered_edges(deps: list[dict[str, Any]], include_cancelled: bool = False) -> list[tuple[str, str]]:
    """(before, after) pairs per the contract's ordering semantics."""
    edges: list[tuple[str, str]] = []
    for dep in deps:
        if dep["isExternal"] or dep["dependencyType"] == "related_to":
            continue
        if dep["status"] == "cancelled" and not include_cancelled:
            continue
        if dep["dependencyType"] == "blocks":
            edges.append((dep["sourceItemId"], dep["targetItemId"]))
        else:  # depends_on, prerequisite, successor: the target comes first
            edges.append((dep["targetItemId"], dep["sourceItemId"]))
    return edges


def find_cycle(edges: list[tuple[str, str]]) -> list[str] | None:
    """Return one cycle as a list of nodes (first == last), or None. Iterative DFS,
    so big graphs do not hit the recursion limit."""
    graph: dict[str, list[str]] = defaultdict(list)
    for before, after in edges:
        graph[before].append(after)
    white, grey, black = 0, 1, 2
    color: dict[str, int] = defaultdict(int)
    for root in list(graph):
        if color[root] != white:
            continue
        path = [root]
        iters = [iter(graph[root])]
        color[root] = grey
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = black
                iters.pop()
            elif color[nxt] == grey:
                return [*path[path.index(nxt) :], nxt]
            elif color[nxt] == white:
                color[nxt] = grey
                path.append(nxt)
                iters.append(iter(graph[nxt]))
    return None


def check_financial_references(ds: dict[str, Any]) -> None:
    """Group B references resolve and stay inside one company."""
    orgs = index(ds["organizations"], "organization")
    projects = index(ds["projects"], "project")
    companies = index(ds["companies"], "company")
    fprojects = index(ds["financialProjects"], "financial project")
    vendors = index(ds["vendors"], "vendor")
    cost_codes = index(ds["costCodes"], "cost code")
    commitments = index(ds["commitments"], "commitment")
    views = index(ds["budgetViews"], "budget view")
    snapshots = index(ds["budgetViewSnapshots"], "snapshot")
    index(ds["primeContracts"], "prime contract")
    index(ds["purchaseOrders"], "purchase order")

    for company in companies.values():
        assert company["organizationId"] in orgs
    for fp in fprojects.values():
        assert isinstance(fp["id"], int)
        assert fp["companyId"] in companies
        if fp["projectId"] is not None:
            # The linked work-tracking project belongs to the company's organization.
            org = companies[fp["companyId"]]["organizationId"]
            assert projects[fp["projectId"]]["organizationId"] == org
    for record in (*vendors.values(), *cost_codes.values()):
        assert isinstance(record["id"], int)
        assert record["companyId"] in companies

    def company_of(project_id: int) -> str:
        return fprojects[project_id]["companyId"]

    for commitment in commitments.values():
        assert isinstance(commitment["id"], str)
        assert vendors[commitment["vendor_id"]]["companyId"] == company_of(commitment["project_id"])
    for view in views.values():
        assert view["project_id"] in fprojects
    codes_by_company: dict[str, set[str]] = defaultdict(set)
    for cc in cost_codes.values():
        codes_by_company[cc["companyId"]].add(cc["full_code"])
    for snap in snapshots.values():
        assert views[snap["budget_view_id"]]["project_id"] == snap["project_id"]
        assert 4 <= len(snap["line_items"]) <= 6
        for line in snap["line_items"]:
            assert line["code"] in codes_by_company[company_of(snap["project_id"])]
    for pc in ds["primeContracts"]:
        assert pc["project_id"] in fprojects
    for po in ds["purchaseOrders"]:
        commitment = commitments[po["commitment_id"]]
        assert commitment["project_id"] == po["project_id"]
        assert po["vendor"] == {
            "id": commitment["vendor_id"],
            "name": vendors[commitment["vendor_id"]]["name"],
        }
        for line in po["line_items"]:
            cc = cost_codes[line["cost_code"]["id"]]
            assert cc["companyId"] == company_of(po["project_id"])
            assert line["cost_code"] == {k: cc[k] for k in ("id", "full_code", "name")}


DATE_SHAPE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def walk_values(node: Any) -> list[tuple[str, Any]]:
    """All (key, value) pairs of nested dicts/lists."""
    out: list[tuple[str, Any]] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            for key, value in cur.items():
                out.append((key, value))
                stack.append(value)
        elif isinstance(cur, list):
            stack.extend(cur)
    return out


def check_time_shapes(ds: dict[str, Any]) -> None:
    for key, value in walk_values(ds):
        if value is None:
            continue
        if key in TIMESTAMP_KEYS:
            assert isinstance(value, str) and TIMESTAMP_RE.match(value), (key, value)
        elif key in DATE_KEYS:
            assert isinstance(value, str) and DATE_RE.match(value), (key, value)
            datetime.date.fromisoformat(value)


# --------------------------------------------------------------------------- demo


@pytest.fixture(scope="module")
def demo() -> dict[str, Any]:
    return demo_dataset(TODAY)


def test_demo_is_deterministic_and_json_serialisable(demo: dict[str, Any]) -> None:
    again = demo_dataset(TODAY)
    assert again == demo
    assert json.loads(json.dumps(demo)) == demo
    # A fresh dict every call: mutating one result must not leak into the next.
    again["items"].clear()
    assert demo_dataset(TODAY)["items"]


def test_demo_constants_name_real_records(demo: dict[str, Any]) -> None:
    assert DEMO_ORG in {o["id"] for o in demo["organizations"]}
    assert DEMO_USER in {u["id"] for u in demo["users"] if u["organizationId"] == DEMO_ORG}
    assert DEMO_COMPANY in {c["id"] for c in demo["companies"] if c["organizationId"] == DEMO_ORG}
    fp = {p["id"]: p for p in demo["financialProjects"]}[DEMO_PROJECT_ID]
    assert fp["companyId"] == DEMO_COMPANY
    sow = {s["id"]: s for s in demo["sows"]}[DEMO_SOW]
    assert sow["projectId"] == fp["projectId"]


def test_demo_shape(demo: dict[str, Any]) -> None:
    assert len(demo["organizations"]) == 2
    assert len(demo["clients"]) == 3
    assert all(1 <= len(c["contacts"]) <= 3 for c in demo["clients"])
    assert len(demo["projects"]) == 4
    assert {p["status"] for p in demo["projects"]} >= {"active", "on_hold", "completed"}
    assert len(demo["sows"]) == 3
    assert 20 <= len(demo["items"]) <= 30
    assert 12 <= len(demo["dependencies"]) <= 20
    # Both organizations have data of every kind, for isolation demos.
    for collection in ("users", "clients", "projects", "companies"):
        assert {r["organizationId"] for r in demo[collection]} == {"org-acme", "org-globex"}


def test_demo_references_resolve(demo: dict[str, Any]) -> None:
    check_group_ac_references(demo)
    check_financial_references(demo)


def test_demo_hierarchy(demo: dict[str, Any]) -> None:
    check_hierarchy(demo["items"])
    items = demo["items"]
    parents = {i["parentItemId"] for i in items}
    task_parents = {i["id"] for i in items if i["type"] == "task_item" and i["id"] in parents}
    nested_reqs = [i for i in items if i["type"] == "requirement" and i["parentItemId"] is not None]
    assert task_parents, "the demo should show sub-tasks"
    assert nested_reqs, "the demo should show nested requirements"
    task_statuses = {i["status"] for i in items if i["type"] == "task_item"}
    assert task_statuses == ITEM_STATUSES


def test_demo_requirement_status_is_the_calculated_one(demo: dict[str, Any]) -> None:
    for item in demo["items"]:
        if item["type"] == "requirement":
            assert item["status"] == expected_requirement_status(item["id"], demo["items"])


def test_demo_dependencies_are_acyclic(demo: dict[str, Any]) -> None:
    deps = demo["dependencies"]
    assert find_cycle(ordered_edges(deps)) is None
    # Stricter than required: reactivating a cancelled one must stay legal too.
    assert find_cycle(ordered_edges(deps, include_cancelled=True)) is None


def test_find_cycle_detects_a_cycle(demo: dict[str, Any]) -> None:
    # Guard against a vacuous acyclicity check: closing a loop must be found.
    deps = copy.deepcopy(demo["dependencies"])
    # item-007 depends_on item-006 already (dep-001); the reverse edge closes a loop.
    deps.append(
        {
            "id": "x",
            "sourceItemId": "item-006",
            "targetItemId": "item-007",
            "dependencyType": "depends_on",
            "status": "active",
            "isExternal": False,
        }
    )
    cycle = find_cycle(ordered_edges(deps))
    assert cycle is not None and cycle[0] == cycle[-1]


def test_demo_dependency_variety(demo: dict[str, Any]) -> None:
    deps = demo["dependencies"]
    internal_types = {d["dependencyType"] for d in deps if not d["isExternal"]}
    assert internal_types == DEP_TYPES
    assert {d["status"] for d in deps} == DEP_STATUSES
    for dep in deps:
        if dep["isExternal"]:
            for field in ("externalOwner", "contactEmail", "vendor", "slaDate", "escalationDate"):
                assert dep[field], (dep["id"], field)

    today = TODAY.isoformat()
    critical = [
        d["id"] for d in deps if d["riskLevel"] == "critical" and d["status"] in {"active", "blocked"}
    ]
    overdue = [
        d["id"]
        for d in deps
        if d.get("slaDate") and d["slaDate"] < today and d["status"] in {"active", "blocked"}
    ]
    assert critical == [DEMO_CRITICAL_DEPENDENCY]
    assert overdue == [DEMO_OVERDUE_DEPENDENCY]
    by_id = {d["id"]: d for d in deps}
    sow_of = {i["id"]: i["sowId"] for i in demo["items"]}
    for dep_id in (DEMO_CRITICAL_DEPENDENCY, DEMO_OVERDUE_DEPENDENCY):
        assert by_id[dep_id]["status"] == "active"
        assert sow_of[by_id[dep_id]["sourceItemId"]] == DEMO_SOW


def test_demo_purchase_order_amounts(demo: dict[str, Any]) -> None:
    assert 1 <= len(demo["purchaseOrders"]) <= 2
    for po in demo["purchaseOrders"]:
        assert re.fullmatch(rf"PO-{po['project_id']}-\d{{4}}", po["number"])
        total = sum((Decimal(line["amount"]) for line in po["line_items"]), Decimal("0"))
        for key in ("original_amount", "revised_amount", "total_amount"):
            assert isinstance(po[key], str)
            assert Decimal(po[key]) == total, (po["id"], key)
        for line in po["line_items"]:
            assert re.fullmatch(r"\d+\.\d{2}", line["amount"]), line


def test_demo_snapshot_variance(demo: dict[str, Any]) -> None:
    negative = False
    for snap in demo["budgetViewSnapshots"]:
        for line in snap["line_items"]:
            current = Decimal(str(line["current_budget"]))
            projected = Decimal(str(line["projected_total"]))
            assert Decimal(str(line["variance"])) == current - projected, line
            negative = negative or line["variance"] < 0
    assert negative, "at least one line should be over budget"


def test_demo_prime_contracts_have_every_field(demo: dict[str, Any]) -> None:
    fields = {
        "id",
        "title",
        "description",
        "contract_number",
        "status",
        "contract_date",
        "start_date",
        "estimated_completion_date",
        "original_contract_value",
        "current_contract_value",
        "executed_change_orders_value",
        "pending_change_orders_value",
        "project_id",
        "customer",
        "payment_terms",
    }
    for pc in demo["primeContracts"]:
        assert fields <= set(pc), fields - set(pc)
        assert re.fullmatch(r"[A-Z][a-z]+", pc["status"])
        assert set(pc["customer"]) == {"id", "name", "contact_name", "contact_email", "contact_phone"}
        assert isinstance(pc["customer"]["id"], int)
        assert set(pc["payment_terms"]) == {
            "type",
            "payment_schedule",
            "retention_percentage",
            "days_until_due",
        }
        assert isinstance(pc["payment_terms"]["days_until_due"], int)
        assert Decimal(str(pc["current_contract_value"])) == Decimal(
            str(pc["original_contract_value"])
        ) + Decimal(str(pc["executed_change_orders_value"]))


def test_demo_timestamps_and_dates(demo: dict[str, Any]) -> None:
    check_time_shapes(demo)
    # Records are never created in the future, whatever time of day it is.
    for key, value in walk_values(demo):
        if key in {"createdAt", "created_at"}:
            assert value[:10] < TODAY.isoformat(), (key, value)


def test_demo_uses_the_given_day() -> None:
    later = demo_dataset(TODAY + datetime.timedelta(days=30))
    overdue = [
        d["id"]
        for d in later["dependencies"]
        if d.get("slaDate")
        and d["slaDate"] < (TODAY + datetime.timedelta(days=30)).isoformat()
        and d["status"] in {"active", "blocked"}
    ]
    # Dates move with `today`: the overdue dependency is still the same one.
    assert DEMO_OVERDUE_DEPENDENCY in overdue
    assert demo_data.DEMO_SOW == DEMO_SOW


# --------------------------------------------------------------------------- bench generator


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return load_generator()


def test_big_dataset_is_valid(gen: ModuleType) -> None:
    ds = gen.big_dataset(2, 500, 500, today=TODAY)
    assert len(ds["sows"]) == 2
    assert len(ds["items"]) == 500
    assert len(ds["dependencies"]) == 500
    check_group_ac_references(ds)
    check_hierarchy(ds["items"])
    check_time_shapes(ds)
    assert find_cycle(ordered_edges(ds["dependencies"], include_cancelled=True)) is None
    for item in ds["items"]:
        if item["type"] == "requirement":
            assert item["status"] == expected_requirement_status(item["id"], ds["items"])
    types = {d["dependencyType"] for d in ds["dependencies"] if not d["isExternal"]}
    assert types == DEP_TYPES
    assert any(d["isExternal"] for d in ds["dependencies"])
    # Same seed, same data; another seed, other data.
    assert gen.big_dataset(2, 500, 500, today=TODAY) == ds
    assert gen.big_dataset(2, 500, 500, seed=2, today=TODAY) != ds


def test_chain_heavy_sow_is_valid(gen: ModuleType) -> None:
    ds = gen.chain_heavy_sow(400, 2000, today=TODAY)
    assert [s["id"] for s in ds["sows"]] == ["sow-chain"]
    assert len(ds["items"]) == 400
    assert len(ds["dependencies"]) == 2000
    check_group_ac_references(ds)
    check_hierarchy(ds["items"])
    assert find_cycle(ordered_edges(ds["dependencies"], include_cancelled=True)) is None


@pytest.mark.parametrize(("sows", "items", "deps"), [(3, 2, 5), (1, 1, 3), (4, 0, 0)])
def test_big_dataset_tiny_edge_cases(gen: ModuleType, sows: int, items: int, deps: int) -> None:
    # SOWs with no or one item cannot host internal edges; the generator falls back
    # to external dependencies instead of looping or creating self-dependencies.
    ds = gen.big_dataset(sows, items, deps, today=TODAY)
    assert len(ds["items"]) == items
    assert len(ds["dependencies"]) == deps
    check_group_ac_references(ds)
    check_hierarchy(ds["items"])


def test_every_date_in_the_stored_demo_moves_with_the_day() -> None:
    """A date under a field the loader does not move would stay fixed while the rest moves on."""
    stored = json.loads((Path(demo_data.__file__).parents[1] / "data" / "demo.json").read_text())
    dated = {key for key, value in walk_values(stored) if isinstance(value, str) and DATE_SHAPE.match(value)}
    assert dated and dated <= demo_data.DATE_FIELDS
    moved = demo_dataset(demo_data.ANCHOR + datetime.timedelta(days=3))
    assert moved["dependencies"][0]["createdAt"] != stored["dependencies"][0]["createdAt"]
