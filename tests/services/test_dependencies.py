"""Dependencies through the operation layer (what the server and the CLI both run).

Every refusal is checked twice: the typed error (HTTP status, field named) and a
database left exactly as it was.
"""

from __future__ import annotations

import threading
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import CycleDetected, Forbidden, InvalidInput, NotFound, SowctlError
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import graph, items, sows
from sowctl.services.access import Caller
from sowctl.storage import models as m

NOW = datetime(2026, 3, 16, 12, 0, 0)
ORG = "acme"
MEMBER = Caller(user_id="user-ada", organization_id=ORG, role="member")
VIEWER = Caller(user_id="user-vic", organization_id=ORG, role="viewer")
OUTSIDER = Caller(user_id="u", organization_id="other", role="member")


@pytest.fixture(autouse=True)
def fixed_clock(db) -> None:
    clock.set_fixed_now(NOW)


def new_sow(caller: Caller = MEMBER, title: str = "Phase 1") -> str:
    return sows.create_sow(caller, SowCreate(title=title)).id


def new_items(sow_id: str, count: int, caller: Caller = MEMBER) -> list[str]:
    return [
        items.create_item(caller, sow_id, ItemCreate(title=f"Item {n}", type="task_item")).id
        for n in range(count)
    ]


def call(
    name: str,
    caller: Caller = MEMBER,
    params: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
) -> Any:
    return operations.call_local(name, caller, params, query, body)


def create(
    source: str, target: str | None, dep_type: str = "depends_on", caller: Caller = MEMBER, **extra: Any
) -> dict:
    body = {"sourceItemId": source, "dependencyType": dep_type, "riskLevel": "medium", **extra}
    if target is not None:
        body["targetItemId"] = target
    return call("deps.create", caller, body=body)


def snapshot() -> list[tuple]:
    """Every dependency and item row: equal snapshots mean the database did not change."""
    deps = list(m.Dependency.select().order_by(m.Dependency.id).tuples())
    rows = list(m.Item.select(m.Item.id, m.Item.updated_at).order_by(m.Item.id).tuples())
    return deps + rows


def refused(error: type[SowctlError], name: str, caller: Caller = MEMBER, **kwargs: Any) -> SowctlError:
    """Run an operation that must fail; assert it changed nothing and return the error."""
    before = snapshot()
    with pytest.raises(error) as caught:
        call(name, caller, **kwargs)
    assert snapshot() == before
    return caught.value


@pytest.fixture
def abc() -> tuple[str, str, str, str]:
    sow_id = new_sow()
    a, b, c = new_items(sow_id, 3)
    return sow_id, a, b, c


# --- create ---------------------------------------------------------------------------


def test_create_internal_returns_the_full_object(abc) -> None:
    sow_id, a, b, _ = abc
    dep = create(a, b, "depends_on", riskLevel="high", slaDate="2026-04-01", notes="wait for B")
    assert dep == {  # no key for a field without a value: no null a typed client must guard
        "id": dep["id"],
        "sourceItemId": a,
        "targetItemId": b,
        "dependencyType": "depends_on",
        "riskLevel": "high",
        "status": "active",
        "isExternal": False,
        "slaDate": "2026-04-01",
        "notes": "wait for B",
        "createdAt": "2026-03-16T12:00:00Z",
        "createdByUserId": "user-ada",
    }
    assert operations.get("deps.create").status == 201
    row = m.Dependency.get_by_id(dep["id"])
    # The SOW is the source item's, and the stored ordering edge puts B before A.
    assert (row.sow_id, row.before_item_id, row.after_item_id) == (sow_id, b, a)


@pytest.mark.parametrize(
    ("dep_type", "edge"),
    [
        ("depends_on", ("target", "source")),
        ("prerequisite", ("target", "source")),
        ("successor", ("target", "source")),
        ("blocks", ("source", "target")),
        ("related_to", None),
    ],
)
def test_each_type_stores_its_ordering_edge(abc, dep_type: str, edge) -> None:
    _, a, b, _ = abc
    dep = create(a, b, dep_type)
    row = m.Dependency.get_by_id(dep["id"])
    named = {"source": a, "target": b}
    expected = (named[edge[0]], named[edge[1]]) if edge else (None, None)
    assert (row.before_item_id, row.after_item_id) == expected


def test_create_external(abc) -> None:
    _, a, _, _ = abc
    dep = create(
        a,
        None,
        isExternal=True,
        externalTarget="Steel mill allocation",
        externalOwner="Ravi Patel",
        contactEmail="ravi@keystone.example",
        vendor="Keystone Steel",
        slaDate="2026-04-01",
        escalationDate="2026-04-05",
    )
    assert dep["isExternal"] is True
    assert dep["targetItemId"] is None
    assert (dep["externalTarget"], dep["externalOwner"], dep["contactEmail"], dep["vendor"]) == (
        "Steel mill allocation",
        "Ravi Patel",
        "ravi@keystone.example",
        "Keystone Steel",
    )
    assert (dep["slaDate"], dep["escalationDate"]) == ("2026-04-01", "2026-04-05")
    row = m.Dependency.get_by_id(dep["id"])
    assert (row.before_item_id, row.after_item_id) == (None, None)  # external deps impose no order


def test_external_is_inferred_from_external_target_alone(abc) -> None:
    _, a, _, _ = abc
    dep = create(a, None, externalTarget="City permit desk")
    assert (dep["isExternal"], dep["targetItemId"], dep["externalTarget"]) == (True, None, "City permit desk")


DROP = object()  # a test-table marker: leave this field out of the body


def _internal(a: str, b: str) -> dict:
    return {"sourceItemId": a, "targetItemId": b, "dependencyType": "depends_on", "riskLevel": "low"}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"sourceItemId": DROP}, "sourceItemId", "is required"),
        ({"sourceItemId": None}, "sourceItemId", "must not be null"),
        ({"notes": None}, "notes", "must not be null"),
        ({"isExternal": None}, "isExternal", "must not be null"),
        ({"sourceItemId": "  "}, "sourceItemId", "must not be empty"),
        ({"dependencyType": DROP}, "dependencyType", "is required"),
        ({"riskLevel": None}, "riskLevel", "must not be null"),
        ({"dependencyType": "needs"}, "dependencyType", "depends_on, blocks, related_to"),
        ({"riskLevel": "severe"}, "riskLevel", "low, medium, high, critical"),
        ({"targetItemId": DROP}, "targetItemId", "required for an internal dependency"),
        ({"targetItemId": None}, "targetItemId", "required for an internal dependency"),
        ({"targetItemId": 7}, "targetItemId", "string"),
        ({"isExternal": True}, "targetItemId", "must be null for an external dependency"),
        ({"isExternal": "yes"}, "isExternal", "boolean"),
        ({"externalTarget": "Vendor"}, "externalTarget", "only allowed on an external dependency"),
        ({"slaDate": "2026-13-01"}, "slaDate", "valid calendar date"),
        ({"slaDate": "next week"}, "slaDate", "YYYY-MM-DD"),
        ({"escalationDate": "2026-04-01T00:00:00Z"}, "escalationDate", "YYYY-MM-DD"),
        ({"contactEmail": "ravi at keystone"}, "contactEmail", "e-mail"),
        ({"contactEmail": "ravi@keystone"}, "contactEmail", "e-mail"),
        ({"notes": 12}, "notes", "string"),
    ],
)
def test_create_validation_names_the_field(abc, change: dict, field: str, words: str) -> None:
    _, a, b, _ = abc
    body = {key: value for key, value in {**_internal(a, b), **change}.items() if value is not DROP}
    error = refused(InvalidInput, "deps.create", body=body)
    assert error.status == 400
    assert field in error.message and words in error.message
    assert [issue.path[0] for issue in error.issues] == [field]


def test_external_without_a_target_name_is_refused(abc) -> None:
    _, a, _, _ = abc
    body = {"sourceItemId": a, "isExternal": True, "dependencyType": "blocks", "riskLevel": "low"}
    error = refused(InvalidInput, "deps.create", body=body)
    assert error.message == "externalTarget: is required for an external dependency"


def test_self_dependency_is_refused_for_every_type(abc) -> None:
    _, a, _, _ = abc
    for dep_type in graph.TARGET_FIRST | graph.SOURCE_FIRST | {"related_to"}:
        body = {**_internal(a, a), "dependencyType": dep_type}
        error = refused(InvalidInput, "deps.create", body=body)
        assert error.message == "targetItemId: an item cannot depend on itself"


def test_missing_items_are_404(abc) -> None:
    _, a, _, _ = abc
    assert refused(NotFound, "deps.create", body=_internal("nope", a)).message == "item nope not found"
    assert refused(NotFound, "deps.create", body=_internal(a, "nope")).message == "item nope not found"
    body = {"sourceItemId": "nope", "externalTarget": "X", "dependencyType": "blocks", "riskLevel": "low"}
    assert refused(NotFound, "deps.create", body=body).status == 404


def test_target_in_another_sow_of_the_org_is_allowed(abc) -> None:
    sow_id, a, _, _ = abc
    (other,) = new_items(new_sow(title="Phase 2"), 1)
    dep = create(a, other)
    assert m.Dependency.get_by_id(dep["id"]).sow_id == sow_id  # the source item's SOW


def test_target_in_another_organization_is_refused_even_locally(abc) -> None:
    _, a, _, _ = abc
    (foreign,) = new_items(new_sow(OUTSIDER), 1, OUTSIDER)
    error = refused(InvalidInput, "deps.create", Caller.local(), body=_internal(a, foreign))
    assert error.message == "targetItemId: must be an item of the source item's organization"
    # A token of the org sees no such item at all.
    assert refused(NotFound, "deps.create", body=_internal(a, foreign)).message == f"item {foreign} not found"


# --- visibility and roles ------------------------------------------------------------------


def test_another_organization_sees_nothing(abc) -> None:
    sow_id, a, b, _ = abc
    dep = create(a, b)
    assert refused(NotFound, "deps.get", OUTSIDER, params={"dependencyId": dep["id"]}).status == 404
    refused(
        NotFound, "deps.update", OUTSIDER, params={"dependencyId": dep["id"]}, body={"status": "resolved"}
    )
    refused(NotFound, "deps.delete", OUTSIDER, params={"dependencyId": dep["id"]})
    refused(NotFound, "deps.create", OUTSIDER, body=_internal(a, b))
    assert (
        refused(NotFound, "deps.list", OUTSIDER, query={"sowId": sow_id}).message == f"SOW {sow_id} not found"
    )
    refused(NotFound, "chain.get", OUTSIDER, query={"sowId": sow_id})
    assert call("deps.list", OUTSIDER) == []
    # Filtering by another organization's item: as if it did not exist (a 404, not []).
    assert refused(NotFound, "deps.list", OUTSIDER, query={"itemId": a}).message == f"item {a} not found"
    # The owner and the local admin see it.
    assert [d["id"] for d in call("deps.list")] == [dep["id"]]
    assert [d["id"] for d in call("deps.list", Caller.local())] == [dep["id"]]


def test_viewer_reads_but_cannot_write(abc) -> None:
    _, a, b, _ = abc
    dep = create(a, b)
    params = {"dependencyId": dep["id"]}
    assert refused(Forbidden, "deps.create", VIEWER, body=_internal(b, a)).status == 403
    refused(Forbidden, "deps.update", VIEWER, params=params, body={"status": "resolved"})
    refused(Forbidden, "deps.delete", VIEWER, params=params)
    assert call("deps.get", VIEWER, params=params) == dep
    assert call("deps.list", VIEWER) == [dep]


# --- get, update, delete ---------------------------------------------------------------------


def test_get(abc) -> None:
    _, a, b, _ = abc
    dep = create(a, b)
    assert call("deps.get", params={"dependencyId": dep["id"]}) == dep
    assert (
        refused(NotFound, "deps.get", params={"dependencyId": "nope"}).message == "dependency nope not found"
    )


def test_update_changes_only_the_fields_sent(abc) -> None:
    _, a, b, _ = abc
    dep = create(a, b, slaDate="2026-04-01", notes="first")
    clock.set_fixed_now(NOW + timedelta(hours=1))
    params = {"dependencyId": dep["id"]}
    updated = call(
        "deps.update", params=params, body={"riskLevel": "critical", "escalationDate": "2026-04-03"}
    )
    assert updated == {
        **dep,
        "riskLevel": "critical",
        "escalationDate": "2026-04-03",
        "updatedAt": "2026-03-16T13:00:00Z",
    }
    # "" removes a date (the field is then left out) and empties the notes.
    cleared = call("deps.update", params=params, body={"slaDate": "", "notes": "", "status": "blocked"})
    assert "slaDate" not in cleared
    assert (cleared["notes"], cleared["status"]) == ("", "blocked")
    assert (cleared["escalationDate"], cleared["riskLevel"]) == ("2026-04-03", "critical")
    assert call("deps.get", params=params) == cleared


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": None}, "status"),
        ({"riskLevel": None}, "riskLevel"),
        ({"slaDate": None}, "slaDate"),
        ({"escalationDate": None}, "escalationDate"),
        ({"notes": None}, "notes"),
        ({"status": "done"}, "status"),
        ({"riskLevel": "extreme"}, "riskLevel"),
        ({"slaDate": "2026-02-30"}, "slaDate"),
        ({"escalationDate": 20260401}, "escalationDate"),
    ],
)
def test_update_validation(abc, body: dict, field: str) -> None:
    _, a, b, _ = abc
    dep = create(a, b)
    error = refused(InvalidInput, "deps.update", params={"dependencyId": dep["id"]}, body=body)
    assert error.message.startswith(f"{field}: ")


def test_update_missing_is_404(abc) -> None:
    assert (
        refused(NotFound, "deps.update", params={"dependencyId": "nope"}, body={"status": "resolved"}).status
        == 404
    )


def test_cancel_clears_the_ordering_edge_and_reactivation_restores_it(abc) -> None:
    _, a, b, _ = abc
    dep = create(a, b, "blocks")
    params = {"dependencyId": dep["id"]}
    call("deps.update", params=params, body={"status": "cancelled"})
    row = m.Dependency.get_by_id(dep["id"])
    assert (row.before_item_id, row.after_item_id) == (None, None)
    call("deps.update", params=params, body={"status": "resolved"})
    row = m.Dependency.get_by_id(dep["id"])
    assert (row.before_item_id, row.after_item_id) == (a, b)


def test_delete(abc) -> None:
    _, a, b, _ = abc
    dep = create(a, b)
    params = {"dependencyId": dep["id"]}
    assert call("deps.delete", params=params) == {"message": f"Dependency {dep['id']} deleted successfully"}
    assert m.Dependency.get_or_none(m.Dependency.id == dep["id"]) is None
    refused(NotFound, "deps.delete", params=params)


def test_deleting_an_item_deletes_its_dependencies(abc) -> None:
    _, a, b, c = abc
    create(a, b)
    kept = create(c, None, externalTarget="Vendor")
    items.delete_item(MEMBER, b)
    assert [d["id"] for d in call("deps.list")] == [kept["id"]]


# --- cycles ------------------------------------------------------------------------------------


def test_spec_three_cycle_is_refused_naming_the_path(abc) -> None:
    _, a, b, c = abc
    create(a, b)  # A on B
    create(b, c)  # B on C
    error = refused(CycleDetected, "deps.create", body=_internal(c, a))  # C on A
    assert error.status == 400
    assert error.message == f"circular dependency: {a} -> {b} -> {c} -> {a}"
    assert error.path == [a, b, c, a]


def test_two_cycle_of_depends_on_and_blocks(abc) -> None:
    _, a, b, _ = abc
    create(a, b, "depends_on")  # B comes before A
    error = refused(CycleDetected, "deps.create", body={**_internal(a, b), "dependencyType": "blocks"})
    assert error.message == f"circular dependency: {a} -> {b} -> {a}"


def test_blocks_chain_cycle(abc) -> None:
    _, a, b, c = abc
    create(a, b, "blocks")
    create(b, c, "blocks")
    error = refused(CycleDetected, "deps.create", body={**_internal(c, a), "dependencyType": "blocks"})
    # Waits-for order: C waits for B (B blocks C), B for A, A for C.
    assert error.message == f"circular dependency: {c} -> {b} -> {a} -> {c}"


def test_prerequisite_and_successor_put_the_target_first(abc) -> None:
    _, a, b, _ = abc
    create(a, b, "prerequisite")  # B before A
    refused(CycleDetected, "deps.create", body={**_internal(b, a), "dependencyType": "successor"})
    create(a, b, "successor")  # same direction again: fine


def test_related_to_loops_are_accepted(abc) -> None:
    _, a, b, c = abc
    create(a, b, "related_to")
    create(b, a, "related_to")
    create(b, c, "related_to")
    create(c, a, "related_to")
    create(a, b, "depends_on")
    create(b, a, "related_to")
    assert len(call("deps.list")) == 6


def test_external_and_cancelled_dependencies_impose_no_order(abc) -> None:
    _, a, b, _ = abc
    create(a, None, externalTarget="Vendor B")
    dep = create(a, b)
    call("deps.update", params={"dependencyId": dep["id"]}, body={"status": "cancelled"})
    back = create(b, a)  # would close a cycle with the cancelled one
    assert back["status"] == "active"


@pytest.mark.parametrize("status", ["active", "blocked", "resolved"])
def test_reactivation_that_closes_a_cycle_is_refused(abc, status: str) -> None:
    _, a, b, c = abc
    first = create(a, b)
    params = {"dependencyId": first["id"]}
    call("deps.update", params=params, body={"status": "cancelled"})
    create(b, c)
    create(c, a)
    error = refused(CycleDetected, "deps.update", params=params, body={"status": status})
    assert error.message == f"circular dependency: {b} -> {c} -> {a} -> {b}"
    # Other changes to the cancelled dependency are still fine.
    assert call("deps.update", params=params, body={"notes": "parked"})["status"] == "cancelled"


def test_resolving_an_active_dependency_needs_no_check(abc) -> None:
    _, a, b, _ = abc
    dep = create(a, b)
    assert (
        call("deps.update", params={"dependencyId": dep["id"]}, body={"status": "resolved"})["status"]
        == "resolved"
    )


def test_cycle_across_sows_of_one_organization(abc) -> None:
    _, a, _, _ = abc
    (x,) = new_items(new_sow(title="Phase 2"), 1)
    create(a, x)
    error = refused(CycleDetected, "deps.create", body=_internal(x, a))
    assert error.message == f"circular dependency: {a} -> {x} -> {a}"


def test_longer_cycle_names_a_shortest_path(abc) -> None:
    sow_id, a, b, c = abc
    d, e = new_items(sow_id, 2)
    for source, target in ((a, b), (b, c), (c, d), (d, e), (b, e)):
        create(source, target)
    error = refused(CycleDetected, "deps.create", body=_internal(e, a))
    assert error.path == [a, b, e, a]


def test_concurrent_creates_cannot_close_a_cycle_together(db_url: str) -> None:
    """Each thread adds one half of a 2-cycle at the same moment; only one may win."""
    sow_id = new_sow()
    rounds = 8
    pairs = [new_items(sow_id, 2) for _ in range(rounds)]
    outcomes: list[str] = []
    lock = threading.Lock()

    def attempt(barrier: threading.Barrier, source: str, target: str) -> None:
        barrier.wait()
        try:
            create(source, target)
            result = "created"
        except CycleDetected:
            result = "refused"
        finally:
            m.database_proxy.close()
        with lock:
            outcomes.append(result)

    for a, b in pairs:
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=attempt, args=(barrier, a, b)),
            threading.Thread(target=attempt, args=(barrier, b, a)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert sorted(outcomes) == ["created"] * rounds + ["refused"] * rounds
    edges = [(r.before_item_id, r.after_item_id) for r in m.Dependency.select() if r.before_item_id]
    assert len(edges) == rounds and graph.is_acyclic(edges)


# --- list ------------------------------------------------------------------------------------


@pytest.fixture
def listed() -> dict[str, str]:
    """Dependencies of every kind, created a minute apart, in two SOWs."""
    sow_id = new_sow()
    other_sow = new_sow(title="Phase 2")
    a, b, c = new_items(sow_id, 3)
    (x,) = new_items(other_sow, 1)
    made: dict[str, str] = {}
    specs = [
        ("plain", a, b, {}),
        ("critical", b, c, {"riskLevel": "critical"}),
        ("critical_resolved", a, c, {"riskLevel": "critical"}),
        ("overdue", c, None, {"externalTarget": "Vendor", "slaDate": "2026-03-15"}),
        ("due_today", a, None, {"externalTarget": "Lab", "slaDate": "2026-03-16"}),
        ("overdue_blocked", b, None, {"externalTarget": "Permit", "slaDate": "2026-01-01"}),
        ("overdue_cancelled", c, a, {"slaDate": "2026-01-01", "dependencyType": "related_to"}),
        ("in_phase2", x, a, {}),
    ]
    for minute, (name, source, target, extra) in enumerate(specs):
        clock.set_fixed_now(NOW + timedelta(minutes=minute))
        made[name] = create(source, target, **{"dependencyType": "depends_on", **extra})["id"]
    for name, status in (("critical_resolved", "resolved"), ("overdue_blocked", "blocked")):
        call("deps.update", params={"dependencyId": made[name]}, body={"status": status})
    call("deps.update", params={"dependencyId": made["overdue_cancelled"]}, body={"status": "cancelled"})
    clock.set_fixed_now(NOW)
    made.update(sow=sow_id, other_sow=other_sow, a=a, b=b, c=c, x=x)
    return made


def _ids(query: dict, caller: Caller = MEMBER) -> list[str]:
    return [dep["id"] for dep in call("deps.list", caller, query=query)]


ALL = [
    "plain",
    "critical",
    "critical_resolved",
    "overdue",
    "due_today",
    "overdue_blocked",
    "overdue_cancelled",
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, [*ALL, "in_phase2"]),
        ({"sowId": "sow"}, ALL),
        ({"sowId": "other_sow"}, ["in_phase2"]),
        ({"itemId": "a"}, ["plain", "critical_resolved", "due_today"]),
        ({"itemId": "x"}, ["in_phase2"]),
        ({"status": "blocked"}, ["overdue_blocked"]),
        ({"status": "cancelled"}, ["overdue_cancelled"]),
        ({"type": "critical"}, ["critical"]),
        ({"type": "overdue"}, ["overdue", "overdue_blocked"]),
        ({"type": "external"}, ["overdue", "due_today", "overdue_blocked"]),
        ({"type": "external", "status": "active"}, ["overdue", "due_today"]),
        ({"itemId": "c", "type": "overdue"}, ["overdue"]),
        ({"sowId": "other_sow", "type": "critical"}, []),
    ],
)
def test_list_filters(listed: dict[str, str], query: dict, expected: list[str]) -> None:
    real = {key: listed[value] if key in ("sowId", "itemId") else value for key, value in query.items()}
    assert _ids(real) == [listed[name] for name in expected]


def test_list_unknown_item_or_sow_is_404_and_an_item_without_dependencies_is_empty(listed) -> None:
    assert refused(NotFound, "deps.list", query={"itemId": "nope"}).message == "item nope not found"
    assert refused(NotFound, "deps.list", query={"itemId": ""}).message == "item  not found"
    assert refused(NotFound, "deps.list", query={"itemId": "nope", "status": "active"}).status == 404
    assert refused(NotFound, "deps.list", query={"sowId": "nope"}).message == "SOW nope not found"
    assert refused(NotFound, "deps.list", query={"sowId": "nope", "itemId": "nope"}).message == (
        "SOW nope not found"
    )
    (lone,) = new_items(listed["sow"], 1)
    assert _ids({"itemId": lone}) == []
    assert _ids({"itemId": listed["a"], "status": "blocked"}) == []  # the item has others
    assert _ids({"itemId": listed["a"], "sowId": listed["other_sow"]}) == []
    # Full rights (local mode) see every organization's items.
    assert _ids({"itemId": lone}, Caller.local()) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [({"status": "done"}, "status"), ({"type": "late"}, "type"), ({"type": "Critical"}, "type")],
)
def test_list_bad_filter_values_name_the_field(listed, query: dict, field: str) -> None:
    error = refused(InvalidInput, "deps.list", query=query)
    assert error.message.startswith(f"{field}: must be one of")


def test_list_pages_with_a_total(listed) -> None:
    op = operations.get("deps.list")
    assert op.paginated
    everything = _ids({})
    request = operations.build_request(op, MEMBER, query={}, offset=2, limit=3)
    result = op.handler(request)
    assert [dep["id"] for dep in result.body] == everything[2:5]
    assert result.total == len(everything)
    request = operations.build_request(op, MEMBER, query={"sowId": listed["other_sow"]}, offset=0, limit=1)
    assert op.handler(request).total == 1


def test_overdue_follows_the_clock(listed) -> None:
    clock.set_fixed_now(datetime.combine(date(2026, 3, 17), datetime.min.time()))
    assert _ids({"type": "overdue"}) == [listed["overdue"], listed["due_today"], listed["overdue_blocked"]]
