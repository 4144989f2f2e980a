"""``lookup.insert_row`` stores what ``Model.create`` stores, with its SQL built once."""

from __future__ import annotations

import datetime

from sowctl.foundation import clock
from sowctl.services import lookup
from sowctl.services.lookup import insert_row
from sowctl.storage import models as m

ORG, PROJECT, SOW = "org-insert", "project-insert", "sow-insert"


def _seed() -> None:
    now = clock.now()
    m.Organization.create(id=ORG, name="Insert")
    m.Project.create(id=PROJECT, organization=ORG, name="P", created_at=now, updated_at=now)
    m.Sow.create(key=SOW, id=SOW, organization=ORG, project=PROJECT, title="S", created_at=now)
    for index, item_id in enumerate(("a", "b")):
        m.Item.create(
            id=item_id,
            sow=SOW,
            type="task_item",
            title=item_id,
            order_index=index,
            created_at=now,
            updated_at=now,
        )


def _stored(dependency_id: str) -> dict:
    row = m.Dependency.select().where(m.Dependency.id == dependency_id).dicts().get()
    return {key: value for key, value in row.items() if key != "id"}


def test_the_row_and_the_instance_match_model_create(db) -> None:
    _seed()
    values = {
        "sow": SOW,
        "source_item": "a",
        "target_item": "b",
        "dependency_type": "depends_on",
        "risk_level": "high",
        "sla_date": datetime.date(2026, 12, 1),
        "notes": "quotes ' and \" kept",
        "created_at": datetime.datetime(2026, 11, 25, 9, 30, 15),
        "before_item_id": "b",
        "after_item_id": "a",
    }
    made = insert_row(m.Dependency, {"id": "by-insert-row", **values})
    m.Dependency.create(id="by-create", **values)
    assert _stored("by-insert-row") == _stored("by-create")
    assert _stored("by-insert-row")["status"] == "active"  # the field's default filled in
    assert made.id == "by-insert-row" and made.sow_id == SOW and made.status == "active"
    assert made.sla_date == datetime.date(2026, 12, 1) and made.updated_at is None


def test_the_sql_is_built_once_per_set_of_fields(db) -> None:
    _seed()
    lookup._INSERTS.clear()
    base = {"sow": SOW, "source_item": "a", "dependency_type": "related_to", "risk_level": "low"}
    for n in range(3):
        insert_row(m.Dependency, {"id": f"d{n}", **base, "created_at": clock.now()})
    assert len(lookup._INSERTS) == 1
    assert m.Dependency.select().count() == 3
