"""The events outbox: every committed write records its events, a refused one none.

Through ``operations.call_local``, so ``data`` is compared with the API's own answer.
"""

from __future__ import annotations

from datetime import datetime

import peewee as pw
import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import CycleDetected, InvalidInput, NotFound
from sowctl.services import events
from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.finance import ORG, build_finance, po_body

T0 = datetime(2026, 3, 16, 9, 30, 0)
LOCAL = Caller.local()


def api(name: str, params=None, query=None, body=None, **kwargs):
    return operations.call_local(name, LOCAL, params, query, body, **kwargs)


def all_events() -> list[dict]:
    return [event.model_dump(mode="json", by_alias=True) for event in events.read_after(0, 100_000)]


def new_events(before: int) -> list[dict]:
    return all_events()[before:]


def summary(found: list[dict]) -> list[tuple[str, str]]:
    return [(event["type"], event["resourceId"]) for event in found]


@pytest.fixture
def sow(db) -> str:
    clock.set_fixed_now(T0)
    api("sows.create", body={"title": "Phase 1", "id": "sow-1"})
    return "sow-1"


def item(sow_id: str, title: str, type_: str = "task_item", parent: str | None = None) -> dict:
    body = {"title": title, "type": type_}
    if parent is not None:
        body["parentItemId"] = parent
    return api("items.create", {"sowId": sow_id}, body=body)


def dep(source: str, target: str, kind: str = "depends_on") -> dict:
    body = {"sourceItemId": source, "targetItemId": target, "dependencyType": kind, "riskLevel": "low"}
    return api("deps.create", body=body)


def test_sow_create_update_record_the_answer(sow):
    (created,) = all_events()
    assert (created["type"], created["resourceId"], created["eventType"]) == ("sow.created", sow, "create")
    assert created["resourceName"] == "sow"
    assert created["organizationId"] == "local"
    assert created["timestamp"] == "2026-03-16T09:30:00Z"
    assert created["data"] == api("sows.get", {"sowId": sow})
    assert created["id"] == "evt_" + "1".zfill(16)
    updated = api("sows.update", {"sowId": sow}, body={"title": "Renamed"})
    assert summary(new_events(1)) == [("sow.updated", sow)]
    assert new_events(1)[0]["data"] == updated


def test_item_create_update_delete(sow):
    created = item(sow, "Task")
    assert new_events(1)[0]["data"] == created
    updated = api("items.update", {"itemId": created["id"]}, body={"title": "New", "status": "completed"})
    event = new_events(2)[0]
    assert (event["type"], event["resourceId"], event["data"]) == ("item.updated", created["id"], updated)
    api("items.delete", {"itemId": created["id"]})
    (deleted,) = new_events(3)
    assert (deleted["type"], deleted["eventType"], deleted["data"]) == (
        "item.deleted",
        "delete",
        {"id": created["id"]},
    )


def test_ids_increase_in_commit_order(sow):
    for index in range(5):
        item(sow, f"T{index}")
    ids = [event["id"] for event in all_events()]
    assert ids == sorted(ids) and len(set(ids)) == 6


def test_reorder_records_one_update_per_moved_item(sow):
    first, second = item(sow, "A"), item(sow, "B")
    api(
        "items.reorder",
        {"sowId": sow},
        body={"items": [{"id": second["id"], "orderIndex": 0}, {"id": first["id"], "orderIndex": 1}]},
    )
    found = new_events(3)
    assert summary(found) == [("item.updated", second["id"]), ("item.updated", first["id"])]
    assert found[0]["data"] == api("items.get", {"itemId": second["id"]})
    assert found[1]["data"]["orderIndex"] == 1


def test_item_delete_cascades_events(sow):
    root = item(sow, "Root", "requirement")
    child = item(sow, "Child", "task_item", parent=root["id"])
    grandchild = item(sow, "Grandchild", "task_item", parent=child["id"])
    outside = item(sow, "Outside")
    kept = item(sow, "Kept")
    first = dep(child["id"], outside["id"])
    second = dep(outside["id"], grandchild["id"], "blocks")
    unrelated = dep(outside["id"], kept["id"])
    before = len(all_events())
    api("items.delete", {"itemId": root["id"]})
    found = summary(new_events(before))
    deleted_deps = sorted(resource for kind, resource in found if kind == "dependency.deleted")
    assert deleted_deps == sorted([first["id"], second["id"]])
    assert unrelated["id"] not in deleted_deps
    assert [resource for kind, resource in found if kind == "item.deleted"] == [
        root["id"],
        child["id"],
        grandchild["id"],
    ]
    assert len(found) == 5


def test_dependency_create_update_delete(sow):
    a, b = item(sow, "A"), item(sow, "B")
    before = len(all_events())
    created = dep(a["id"], b["id"])
    updated = api("deps.update", {"dependencyId": created["id"]}, body={"riskLevel": "critical"})
    api("deps.delete", {"dependencyId": created["id"]})
    found = new_events(before)
    assert summary(found) == [
        ("dependency.created", created["id"]),
        ("dependency.updated", created["id"]),
        ("dependency.deleted", created["id"]),
    ]
    assert found[0]["data"] == created
    assert found[1]["data"] == updated
    assert found[2]["data"] == {"id": created["id"]}


def test_sow_delete_cascades_events(sow):
    a = item(sow, "A", "requirement")
    b = item(sow, "B", parent=a["id"])
    link = dep(a["id"], b["id"], "related_to")
    before = len(all_events())
    answer = api("sows.delete", {"sowId": sow})
    found = summary(new_events(before))
    assert found[-1] == ("sow.deleted", sow)
    assert sorted(found[:-1]) == sorted(
        [("dependency.deleted", link["id"]), ("item.deleted", a["id"]), ("item.deleted", b["id"])]
    )
    assert (answer["deletedItems"], answer["deletedDependencies"]) == (2, 1)


def test_refused_writes_record_nothing(sow):
    a, b = item(sow, "A"), item(sow, "B")
    dep(a["id"], b["id"])
    before = all_events()
    with pytest.raises(CycleDetected):
        dep(b["id"], a["id"])
    with pytest.raises(NotFound):
        item(sow, "Orphan", parent="no-such-item")
    with pytest.raises(NotFound):
        api(
            "items.reorder",
            {"sowId": sow},
            body={"items": [{"id": a["id"], "orderIndex": 3}, {"id": "ghost", "orderIndex": 1}]},
        )
    with pytest.raises(InvalidInput):
        api("sows.create", body={"title": "Again", "id": sow})
    assert all_events() == before
    assert m.Event.select().count() == len(before)


def test_purchase_order_create_records_the_answer(db):
    build_finance()
    order = api("finance.create_po", body=po_body())
    (event,) = all_events()
    assert (event["type"], event["resourceName"], event["resourceId"]) == (
        "purchaseOrder.created",
        "purchaseOrder",
        str(order["id"]),
    )
    assert event["organizationId"] == ORG
    assert event["data"] == order


def test_refused_purchase_order_records_nothing(db):
    build_finance()
    with pytest.raises(NotFound):
        api("finance.create_po", body=po_body(commitment_id="987654"))
    assert m.Event.select().count() == 0


# --- retention -------------------------------------------------------------------------------


@pytest.fixture
def retention(monkeypatch):
    """Set the outbox's retention for one test (the process's setting is restored after)."""
    monkeypatch.setattr(events, "_retention", events.Retention())

    def keep(count: int) -> None:
        events.set_retention(count)

    return keep


def test_retention_keeps_at_most_about_n_events_pruned_by_writes(sow, retention):
    retention(20)
    for index in range(60):
        item(sow, f"T{index}")
    kept = all_events()
    assert 20 <= len(kept) <= 22  # pruned every 2 events (a tenth of 20): at most that over
    newest = m.Event.select(pw.fn.MAX(m.Event.id)).scalar()
    assert kept[-1]["id"] == "evt_" + str(newest).zfill(16)  # the newest are the ones kept
    assert kept[-1]["data"]["title"] == "T59"


def test_a_prune_deletes_at_most_a_batch(sow, retention):
    retention(100_000)
    for index in range(30):
        item(sow, f"T{index}")
    assert events.prune(keep=5, batch=10) == 10
    assert m.Event.select().count() == 31 - 10
    assert events.prune(keep=5, batch=100) == 16
    assert [e["data"]["title"] for e in all_events()] == [f"T{n}" for n in range(25, 30)]


def test_retention_zero_records_no_events(db, retention):
    retention(0)
    api("sows.create", body={"title": "Quiet", "id": "quiet"})
    item("quiet", "Unrecorded")
    assert m.Event.select().count() == 0
    with pytest.raises(ValueError):
        events.set_retention(-1)


def test_since_latest_starts_after_the_newest(sow):
    item(sow, "A")
    page = api("events.list", query={"since": "latest"})
    assert page == {"events": [], "lastEventId": all_events()[-1]["id"], "hasMore": False}
    later = item(sow, "B")
    after = api("events.list", query={"since": page["lastEventId"]})
    assert [e["resourceId"] for e in after["events"]] == [later["id"]]


def test_a_page_is_bounded_by_its_size_and_the_next_starts_right_after_it(sow):
    made = [item(sow, f"{n:03d}" + "x" * 9_997)["id"] for n in range(12)]
    seen: list[str] = []
    after = 0
    pages = []
    while True:
        page = events.read_page(after, 1000, max_bytes=30_000)
        pages.append(len(page.events))
        seen.extend(event.resource_id for event in page.events if event.type == "item.created")
        assert page.last_event_id == page.events[-1].id
        after = int(page.last_event_id.removeprefix("evt_"))
        if not page.has_more:
            break
    # 30,000 bytes hold three events of 10,000-character titles: the third passes them.
    assert pages == [4, 3, 3, 3], pages  # the SOW's event and three items, then three at a time
    assert seen == made


def test_an_event_larger_than_the_page_bound_is_given_alone(sow):
    made = [item(sow, "y" * 10_000)["id"] for _ in range(3)]
    after, pages = 1, []  # after the SOW's event
    while True:
        page = events.read_page(after, 1000, max_bytes=1)
        pages.append(([event.resource_id for event in page.events], page.has_more))
        after = int(page.last_event_id.removeprefix("evt_"))
        if not page.has_more:
            break
    assert pages == [([made[0]], True), ([made[1]], True), ([made[2]], False)]
